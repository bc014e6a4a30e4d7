"""Weir's protocol gateway: one module per foreign protocol, each on its own port, each a thin
servicer over a transport-neutral translation core that speaks the public Weir SDK to the cluster.
Stateless: group membership, positions and messages live in the cluster, so any number of
instances can serve behind the same routers."""
