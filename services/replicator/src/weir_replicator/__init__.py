"""Weir replicator (DESIGN §5)."""
