"""How every Weir service reads its settings: command-line flags over `WEIR_<SERVICE>_*` environment
variables over defaults (pydantic-settings' own CLI source), `--help` listing every setting with its
description and default, and a bad setting answered with one line per wrong field and exit status 2
instead of a traceback.

Flags are the settings' names in kebab case: `WEIR_ROUTER_GROUP_SESSION_TIMEOUT_MS=3000` is
`--group-session-timeout-ms 3000`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TypeVar

from pydantic import ValidationError
from pydantic_settings import BaseSettings, CliSettingsSource, SettingsError

Settings = TypeVar("Settings", bound=BaseSettings)


def load_settings(settings_cls: type[Settings], prog: str, argv: Sequence[str] | None = None) -> Settings:
    """The settings from `argv` (default: this process's arguments), the environment and the
    defaults, in that order of precedence. `--help` prints the settings and exits 0; a wrong value,
    a failed rule or an unknown flag prints `<prog>: ...` lines on stderr and exits 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        source: CliSettingsSource[object] = CliSettingsSource(
            settings_cls, cli_prog_name=prog, cli_kebab_case=True, cli_implicit_flags=True, cli_exit_on_error=False
        )
        return settings_cls(_cli_settings_source=source(args=args))
    except ValidationError as error:
        for line in describe_errors(settings_cls, prog, error):
            print(line, file=sys.stderr)
    except SettingsError as error:
        print(f"{prog}: {error} (see {prog} --help)", file=sys.stderr)
    raise SystemExit(2)


def describe_errors(settings_cls: type[BaseSettings], prog: str, error: ValidationError) -> list[str]:
    """One line per wrong setting: its name, environment variable and flag, and what was wrong."""
    prefix = str(settings_cls.model_config.get("env_prefix", ""))
    lines = []
    for item in error.errors():
        message = str(item["msg"]).removeprefix("Value error, ")
        if not item["loc"]:  # a rule over several settings
            lines.append(f"{prog}: invalid settings: {message}")
            continue
        name = str(item["loc"][0])
        given = f" (got {item['input']!r})" if "input" in item and not isinstance(item["input"], dict) else ""
        flag = "--" + name.replace("_", "-")
        lines.append(f"{prog}: invalid setting {name} ({prefix}{name.upper()} / {flag}): {message}{given}")
    return lines
