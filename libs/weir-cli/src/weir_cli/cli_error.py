"""The one error type of the `weir` CLI (its own module, so that every layer of the CLI can raise it
without importing the modules that find the cluster)."""

from __future__ import annotations


class CliError(Exception):
    """A mistake or a failure the CLI reports in one line (exit status `status`)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status
