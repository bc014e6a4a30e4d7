"""Weir router: cluster metadata, placement, routing and consumer-group assignment (DESIGN §4)."""
