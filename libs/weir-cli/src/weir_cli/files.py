"""How the CLI writes its state files (cluster.json, ports.json, contexts): whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, text: str, *, owner_only: bool = False) -> None:
    """Write `text` to `path` through a temporary file renamed over it, so a reader never sees half a
    file; `owner_only`: mode 0600 (a file naming keys or token files). Makes the parent directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if owner_only else 0o644)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    temporary.replace(path)
