"""How every Weir service reads its settings: command-line flags over `WEIR_<SERVICE>_*` environment
variables over defaults (pydantic-settings' own CLI source), `--help` listing every setting with its
description, default and variable, and a bad setting answered with one line per wrong field and exit
status 2 instead of a traceback.

Flags are the settings' names in kebab case: `WEIR_ROUTER_GROUP_SESSION_TIMEOUT_MS=3000` is
`--group-session-timeout-ms 3000`; a boolean setting is `--name` / `--no-name`.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Sequence
from typing import Annotated, TypeVar

from pydantic import AfterValidator, BeforeValidator, ValidationError
from pydantic_settings import BaseSettings, CliSettingsSource, SettingsError
from weir.errors import WeirError
from weir.router_client import router_addresses

from weir_server.logs import LogFormatName

Settings = TypeVar("Settings", bound=BaseSettings)

EXIT_BAD_SETTINGS = 2  # argparse's (and the shell's) "usage error"


def _known_log_level(value: str) -> str:
    """`value` upper-cased if it names a Python logging level (`info` -> `INFO`); ValueError if not."""
    level = value.strip().upper()
    if level not in logging.getLevelNamesMapping():
        raise ValueError("not a logging level: expected DEBUG, INFO, WARNING, ERROR or CRITICAL (any case)")
    return level


LogLevel = Annotated[str, AfterValidator(_known_log_level)]
"""A service's `log_level` setting: a Python logging level name, any case, stored upper-cased."""


def _lower_case(value: object) -> object:
    """A string stripped and lower-cased (`JSON` -> `json`); anything else as it is, for the type's check."""
    return value.strip().lower() if isinstance(value, str) else value


LogFormat = Annotated[LogFormatName, BeforeValidator(_lower_case)]
"""A service's `log_format` setting: `text` or `json` (any case), `weir_server.logs`."""


def _router_list(value: str) -> str:
    """`value` if it is a 'host:port,host:port' list of routers; ValueError saying what is wrong if not."""
    try:
        router_addresses(value)
    except WeirError as error:
        raise ValueError(error.message) from None
    return value


RouterList = Annotated[str, AfterValidator(_router_list)]
"""A service's `routers` setting: the cluster's routers, the SDK's bootstrap (gateway, Numaflow
source, invoker)."""


def load_settings(settings_cls: type[Settings], prog: str, argv: Sequence[str] | None = None) -> Settings:
    """The settings from `argv` (default: this process's arguments), the environment and the
    defaults, in that order of precedence. `--help` prints the settings and exits 0 (SystemExit);
    a wrong value, a failed rule or an unknown flag prints `<prog>: ...` lines on stderr and exits 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        source: CliSettingsSource[object] = CliSettingsSource(
            settings_cls,
            cli_prog_name=prog,
            cli_kebab_case=True,
            cli_implicit_flags=True,
            cli_exit_on_error=False,
            cli_show_env_vars=True,
            cli_hide_none_type=True,
        )
        return settings_cls(_cli_settings_source=source(args=args))
    except ValidationError as error:
        for line in describe_errors(settings_cls, prog, error):
            print(line, file=sys.stderr)
    except SettingsError as error:  # argparse: unknown flag, missing value, ...
        message = " ".join(str(error).split())
        print(f"{prog}: {message} (see {prog} --help)", file=sys.stderr)
    raise SystemExit(EXIT_BAD_SETTINGS)


def setting_names(settings_cls: type[BaseSettings], field: str) -> str:
    """`WEIR_ROUTER_PORT / --port`: the environment variable and the flag of setting `field`."""
    prefix = str(settings_cls.model_config.get("env_prefix", ""))
    return f"{prefix}{field}".upper() + " / --" + field.replace("_", "-")


def describe_errors(settings_cls: type[BaseSettings], prog: str, error: ValidationError) -> list[str]:
    """One line per wrong setting, `<prog>: invalid setting <field> (<VARIABLE> / <--flag>): <what
    was wrong> (got <value>)`; a broken rule over several settings (a model validator) is one
    `<prog>: invalid settings (<the variables and flags its message names>): <message>` line.
    A field with several errors (a union's members) gets only its first."""
    lines: list[str] = []
    seen: set[str] = set()
    for item in error.errors():
        message = str(item["msg"]).removeprefix("Value error, ")
        if not item["loc"]:
            named = sorted(
                (match.start(), name)
                for name in settings_cls.model_fields
                if (match := re.search(rf"\b{name}\b", message)) is not None
            )
            where = f" ({', '.join(setting_names(settings_cls, name) for _, name in named)})" if named else ""
            lines.append(f"{prog}: invalid settings{where}: {message}")
            continue
        field = str(item["loc"][0])
        if field in seen:
            continue
        seen.add(field)
        given = f" (got {item['input']!r})" if "input" in item and not isinstance(item["input"], dict) else ""
        lines.append(f"{prog}: invalid setting {field} ({setting_names(settings_cls, field)}): {message}{given}")
    return lines
