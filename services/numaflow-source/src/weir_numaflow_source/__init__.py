"""Weir as a Numaflow user-defined source (source.v1, served with pynumaflow on a Unix socket).

`core.WeirSource` is the translation (transport-neutral, over the public SDK), `sourcer.WeirSourcer`
pynumaflow's `Sourcer` over it, `server` the sidecar process."""
