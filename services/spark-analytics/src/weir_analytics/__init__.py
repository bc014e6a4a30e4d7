"""Weir analytics (issue 6)."""
