"""The documentation site's Reference section, generated from the code at every build (a mkdocs hook:
`hooks: [scripts/docs_reference.py]` in mkdocs.yml), so it cannot go stale and nothing generated is
committed:

- one page per service with every setting of its pydantic-settings class (name, environment
  variable, flag, type, default, description), the classes found in `services/*/src/*/settings.py`;
- the `weir` CLI, every command and subcommand with its usage and arguments, walked from the
  argparse parser the CLI itself runs (`weir_cli.parser.build_parser`);
- the gRPC APIs, one page per .proto file (`scripts/docs_protos.py`);
- the SDK, one page per public module of `libs/weir/src/weir`, rendered by mkdocstrings.

The pages exist only in the build (mkdocs' generated files); `on_config` adds them to the nav under
"Reference" after the hand-written pages there.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docs_protos import REPO, inline, proto_pages
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings

REFERENCE = "Reference"
SDK_ROOT = REPO / "libs" / "weir" / "src" / "weir"


@dataclass(frozen=True)
class Page:
    """One generated page: `path` relative to the docs folder, its nav `group` under Reference
    (Settings, CLI, gRPC APIs, SDK), its nav `title` and its Markdown `content`."""

    path: str
    group: str
    title: str
    content: str


def service_settings() -> list[tuple[str, type[BaseSettings]]]:
    """(program name, settings class) of every service: each BaseSettings subclass defined in a
    `services/<name>/src/<package>/settings.py`, named by the service's first console script."""
    found = []
    for module_file in sorted(REPO.glob("services/*/src/*/settings.py")):
        service_dir = module_file.parents[2]
        scripts = tomllib.loads((service_dir / "pyproject.toml").read_text())["project"].get("scripts", {})
        program = next(iter(scripts), service_dir.name)
        module = importlib.import_module(f"{module_file.parent.name}.settings")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseSettings) and cls.__module__ == module.__name__:
                found.append((program, cls))
    return found


def _type_name(annotation: Any) -> str:
    """A field's type as a reader writes it: `int`, `Path | None`, `Literal['text', 'json']`."""
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace("pathlib.", "")


_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


def _bounds(metadata: list[Any]) -> str:
    """A field's numeric bounds from its constraints, as `>= 1000, <= 43200000` ('' without any)."""
    found = [f"{sign} {getattr(item, name)}" for item in metadata for name, sign in _BOUNDS if hasattr(item, name)]
    return ", ".join(found)


def _default(cls: type[BaseSettings], name: str) -> str:
    field = cls.model_fields[name]
    if field.default_factory is not None:
        return "computed at start (see description)"
    if field.default is PydanticUndefined:
        return "**required**"
    if field.default is None or field.default == "":
        return "unset"
    value = field.default if isinstance(field.default, bool | int | float) else str(field.default)
    return f"`{value}`"


def settings_page(program: str, cls: type[BaseSettings]) -> Page:
    """The page of one service's settings: a table row per field of `cls`, inherited ones included."""
    prefix = str(cls.model_config.get("env_prefix", ""))
    lines = [
        f"# {program} settings",
        "",
        f"Generated from `{cls.__module__}.{cls.__name__}`. Every setting is the flag "
        f"`--<setting-in-kebab-case>` or the environment variable `{prefix}<SETTING>` (case-insensitive); "
        f"a flag wins over the variable, and `{program} --help` prints the same list.",
        "",
        "| setting | environment variable | flag | type | default | description |",
        "|---|---|---|---|---|---|",
    ]
    for name, field in cls.model_fields.items():
        variable = f"{prefix}{name}".upper()
        flag = "--" + name.replace("_", "-")
        kind = inline(f"{_type_name(field.annotation)} {_bounds(field.metadata)}".strip())
        meaning = inline(field.description or "")
        lines.append(f"| `{name}` | `{variable}` | `{flag}` | {kind} | {_default(cls, name)} | {meaning} |")
    slug = program.removeprefix("weir-")
    return Page(f"reference/settings/{slug}.md", "Settings", program, "\n".join(lines) + "\n")


def cli_commands(parser: argparse.ArgumentParser, path: str = "weir") -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command of the CLI as (`weir stream create`, its parser), depth first, the root first."""
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += cli_commands(child, f"{path} {name}")
    return found


def _argument_rows(parser: argparse.ArgumentParser, shared: set[int]) -> list[str]:
    rows = []
    for action in parser._actions:
        hidden = action.help == argparse.SUPPRESS or id(action) in shared
        if hidden or isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        names = ", ".join(f"`{option}`" for option in action.option_strings) or f"`{action.metavar or action.dest}`"
        value = "" if action.nargs == 0 else (action.metavar or action.dest.upper())
        choices = f" (one of {', '.join(map(str, action.choices))})" if action.choices else ""
        help_text = _expand(action.help or "", action, parser)
        unset = action.default is None or action.default is False or action.default in ("", argparse.SUPPRESS)
        default = "" if unset else f"`{action.default}`"
        rows.append(f"| {names} | {inline(str(value))} | {default} | {inline(help_text + choices)} |")
    return rows


def _expand(help_text: str, action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    """An argparse help string with `%(default)s` and `%(prog)s` filled in, as `--help` shows it."""
    try:
        return help_text % {**vars(action), "prog": parser.prog}
    except (KeyError, TypeError, ValueError):
        return help_text


def _anchor(command: str) -> str:
    return command.replace(" ", "-")


def cli_page() -> Page:
    """The page of the `weir` CLI: the global options once, then each command with its usage and
    its own arguments."""
    from weir_cli.cli import version
    from weir_cli.parser import build_parser

    os.environ["COLUMNS"] = "100"  # argparse wraps usage lines at the terminal's width
    root = build_parser(version())
    shared = {id(action) for action in root._actions}
    commands = cli_commands(root)
    lines = ["# weir CLI", "", "Generated from the parser `weir` runs (`weir_cli.parser.build_parser`).", ""]
    lines += ["## Commands", ""]
    lines += [f"- [`{command}`](#{_anchor(command)})" for command, _ in commands[1:]]
    for command, parser in commands:
        lines += ["", f"## {command} {{#{_anchor(command)}}}", ""]
        if parser.description:
            lines += [inline(parser.description), ""]
        lines += ["```text", parser.format_usage().strip(), "```", ""]
        rows = _argument_rows(parser, set() if parser is root else shared)
        if rows:
            title = "Global options (every command takes them, before or after its verb)" if parser is root else ""
            lines += [title, "", "| argument | value | default | description |", "|---|---|---|---|", *rows]
        children = [child for child, _ in commands if child.rsplit(" ", 1)[0] == command]
        if children and parser is not root:
            lines += ["", "Commands: " + ", ".join(f"[`{child}`](#{_anchor(child)})" for child in children)]
    return Page("reference/cli.md", "CLI", "weir CLI", "\n".join(lines) + "\n")


def sdk_pages() -> list[Page]:
    """One mkdocstrings page per public module of the SDK (`weir.cluster`, `weir.errors`, ...)."""
    modules = sorted(path.stem for path in SDK_ROOT.glob("*.py") if not path.stem.startswith("_"))
    pages = [Page("reference/sdk/index.md", "SDK", "weir", "# weir\n\n::: weir\n    options:\n      members: false\n")]
    for module in modules:
        pages.append(
            Page(f"reference/sdk/{module}.md", "SDK", f"weir.{module}", f"# weir.{module}\n\n::: weir.{module}\n")
        )
    return pages


def reference_pages() -> list[Page]:
    """Every generated page, in nav order: settings, CLI, gRPC APIs, SDK."""
    pages = [settings_page(program, cls) for program, cls in service_settings()]
    pages.append(cli_page())
    pages += [Page(p.path, "gRPC APIs", p.title, p.content) for p in proto_pages()]
    return pages + sdk_pages()


# mkdocs hooks ------------------------------------------------------------------------------------

_PAGES: list[Page] = []


def on_config(config: Any) -> Any:
    """Generate the pages and append them to the nav's Reference section, grouped."""
    _PAGES[:] = reference_pages()
    section = next(item for item in config["nav"] if isinstance(item, dict) and REFERENCE in item)
    entries: list[Any] = section[REFERENCE]
    groups: dict[str, list[Any]] = {}
    for page in _PAGES:
        groups.setdefault(page.group, []).append({page.title: page.path})
    entries += [{group: items} for group, items in groups.items()]
    return config


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the build as in-memory files."""
    from mkdocs.structure.files import File

    for page in _PAGES:
        files.append(File.generated(config, page.path, content=page.content))
    return files


ALERTS_MARKER = "<!-- generated: alerts -->"


def alerts_table(rules_file: Path, page_path: str) -> str:
    """The alerting rules of a Prometheus rules file as a Markdown table: alert, severity, the
    expression and how long it must hold, its summary, and a link to its runbook (its `runbook_url`,
    a path from the repository root, made relative to the page at `page_path`)."""
    import yaml

    rows = ["| alert | severity | fires when | for | summary |", "|---|---|---|---|---|"]
    for group in yaml.safe_load(rules_file.read_text())["groups"]:
        for rule in group["rules"]:
            if "alert" not in rule:
                continue
            annotations = rule.get("annotations", {})
            runbook = str(annotations.get("runbook_url", "")).removeprefix("docs/")
            name = f"`{rule['alert']}`"
            if runbook:
                name = f"[{name}]({os.path.relpath(runbook, os.path.dirname(page_path))})"
            rows.append(
                f"| {name} | {rule.get('labels', {}).get('severity', '')} | `{' '.join(str(rule['expr']).split())}` "
                f"| {rule.get('for', '')} | {inline(str(annotations.get('summary', '')))} |"
            )
    return "\n".join(rows)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the alerts table into the page that holds the marker."""
    if ALERTS_MARKER in markdown:
        table = alerts_table(REPO / "deploy" / "prometheus" / "rules.yml", page.file.src_uri)
        markdown = markdown.replace(ALERTS_MARKER, table)
    return markdown
