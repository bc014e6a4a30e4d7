"""`weir context save|use|ls|show|rm`: named connection profiles, as `nats context` keeps them, so a
cluster with TLS and auth is one `weir context use NAME` away instead of four flags on every command.

A context is a JSON file `$XDG_CONFIG_HOME/weir/contexts/<name>.json` (default `~/.config/weir/...`,
owner-only): `routers` ("host:port,..."), `tls_ca`, `tls_cert`, `tls_key`, `token_file` (absolute
paths; the token itself is never stored, only the file that holds it) and a `description`. The
selected one is named in `$XDG_CONFIG_HOME/weir/context`. A command uses, first found: `--router` /
`--data-dir`; `--context NAME`; `$WEIR_CONTEXT`; `$WEIR_ROUTERS`; the selected context; the local
cluster search (weir.discovery). A context's TLS files and token file are the defaults of
`--tls-ca`, `--tls-cert`, `--tls-key` and `--token-file`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from weir_cli.cli_error import CliError
from weir_cli.files import write_atomically
from weir_cli.output import emit, table

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
FILE_FIELDS = ("tls_ca", "tls_cert", "tls_key", "token_file")


@dataclass(frozen=True, slots=True)
class Context:
    """One saved profile (see the module docstring); "" = not set."""

    name: str
    routers: str
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    token_file: str = ""
    description: str = ""


def config_home(environ: dict[str, str] | None = None) -> Path:
    environ = dict(os.environ) if environ is None else environ
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "weir"


def _path(name: str) -> Path:
    return config_home() / "contexts" / f"{check_name(name)}.json"


def check_name(name: str) -> str:
    """`name` when it is a context name (1-64 of A-Z a-z 0-9 _ . -, starting with a letter or
    digit). Errors: CliError (status 2)."""
    if not NAME_PATTERN.fullmatch(name):
        raise CliError(f"context name {name!r}: 1-64 of A-Z a-z 0-9 _ . - (starting with a letter or digit)", status=2)
    return name


def load(name: str) -> Context:
    """The saved context `name`. Errors: CliError naming the saved ones when there is none."""
    try:
        fields: dict[str, Any] = json.loads(_path(name).read_text())
    except FileNotFoundError:
        saved = ", ".join(context.name for context in saved_contexts()) or "none saved"
        raise CliError(f"no context {name!r} ({saved}; 'weir context save NAME --router ...' makes one)") from None
    except (OSError, ValueError) as error:
        raise CliError(f"context {name!r} cannot be read ({_path(name)}: {error})") from None
    known = {key: str(value) for key, value in fields.items() if key in Context.__slots__ and key != "name"}
    return Context(name=name, **known)


def saved_contexts() -> list[Context]:
    """Every saved context, by name (unreadable files left out)."""
    found = []
    for path in sorted((config_home() / "contexts").glob("*.json")):
        try:
            found.append(load(path.stem))
        except CliError:
            continue
    return found


def selected_name() -> str:
    """The selected context's name ("" = none)."""
    try:
        return (config_home() / "context").read_text().strip()
    except OSError:
        return ""


def active(args: Any) -> Context | None:
    """The context this command uses: --context, else $WEIR_CONTEXT, else (unless $WEIR_ROUTERS is
    set) the selected one; None for none. Errors: CliError when the named one does not exist."""
    name = getattr(args, "context", None) or os.environ.get("WEIR_CONTEXT", "")
    if not name and not (os.environ.get("WEIR_ROUTERS") or os.environ.get("WEIR_ROUTER")):
        name = selected_name()
    return load(name) if name else None


async def context_save(args: argparse.Namespace) -> int:
    return _context_save(args)


def _context_save(args: argparse.Namespace) -> int:
    """Save (or replace) context NAME from --router and the TLS and token flags; --select selects it."""
    name = check_name(args.name)
    if not args.router:
        raise CliError("weir context save: give the cluster's --router HOST:PORT[,...]", status=2)
    files = {}
    for field in FILE_FIELDS:
        given = getattr(args, field, None)
        if given:
            path = Path(given).expanduser().resolve()
            if not path.is_file():
                raise CliError(f"weir context save: --{field.replace('_', '-')} {given}: no such file", status=2)
            files[field] = str(path)
    if bool(files.get("tls_cert")) != bool(files.get("tls_key")):
        raise CliError("weir context save: --tls-cert and --tls-key go together", status=2)
    context = Context(name=name, routers=args.router, description=args.description, **files)
    fields = {key: value for key, value in asdict(context).items() if key != "name"}
    write_atomically(_path(name), json.dumps(fields, indent=2) + "\n", owner_only=True)
    if args.select:
        write_atomically(config_home() / "context", name + "\n", owner_only=True)
    selected = " and selected it" if args.select else f" ('weir context use {name}' selects it)"
    emit({"saved": name, "selected": bool(args.select), **fields}, args.json, f"saved context {name}{selected}")
    return 0


async def context_use(args: argparse.Namespace) -> int:
    return _context_use(args)


def _context_use(args: argparse.Namespace) -> int:
    """Select context NAME for every later command (`--none`: select none)."""
    if args.none:
        (config_home() / "context").unlink(missing_ok=True)
        emit({"selected": None}, args.json, "no context selected")
        return 0
    if not args.name:
        raise CliError("weir context use: give a NAME (or --none)", status=2)
    context = load(args.name)
    write_atomically(config_home() / "context", context.name + "\n", owner_only=True)
    emit({"selected": context.name}, args.json, f"using context {context.name} (routers {context.routers})")
    return 0


async def context_ls(args: argparse.Namespace) -> int:
    return _context_ls(args)


def _context_ls(args: argparse.Namespace) -> int:
    contexts = saved_contexts()
    chosen = selected_name()
    if args.json:
        for context in contexts:
            emit({**asdict(context), "selected": context.name == chosen}, True)
        return 0
    if not contexts:
        print("(no contexts; 'weir context save NAME --router HOST:PORT' makes one)")
        return 0
    rows = [
        (("* " if c.name == chosen else "  ") + c.name, c.routers, "yes" if c.tls_ca else "no", c.description)
        for c in contexts
    ]
    print(table(["  name", "routers", "tls", "description"], rows))
    return 0


async def context_show(args: argparse.Namespace) -> int:
    return _context_show(args)


def _context_show(args: argparse.Namespace) -> int:
    name = args.name or selected_name()
    if not name:
        raise CliError("no context selected ('weir context ls' lists them)")
    context = load(name)
    lines = [f"{key}: {value}" for key, value in asdict(context).items() if value]
    emit(asdict(context), args.json, "\n".join(lines))
    return 0


async def context_rm(args: argparse.Namespace) -> int:
    return _context_rm(args)


def _context_rm(args: argparse.Namespace) -> int:
    context = load(args.name)
    _path(context.name).unlink()
    if selected_name() == context.name:
        (config_home() / "context").unlink(missing_ok=True)
    emit({"removed": context.name}, args.json, f"removed context {context.name}")
    return 0
