"""Weir invoker: durable handlers over streams (Restate service protocol V2)."""
