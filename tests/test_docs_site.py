"""The documentation site, built for real (`mkdocs build --strict`, as `make docs` does) and checked
as a reader would use it: every page of the nav is there, every internal link and anchor of the
built HTML lands somewhere, and the generated reference names every setting of every service and
every command of the CLI. What the test expects comes from the code itself (the settings classes and
the CLI's parser), not from the generator, so a setting or command the generator drops fails here.
"""

from __future__ import annotations

import argparse
import html
import importlib
import inspect
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from google.protobuf.descriptor import FileDescriptor
from pydantic_settings import BaseSettings

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
# Pages that are reports and design notes for the project's developers: they may cite issues.
INTERNAL_PAGES = ("internals/", "benchmarks.html", "reliability.html", "durability.html", "design-node-commit.html")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `make docs` builds it (strict: a warning fails), into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        check=False,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    return out


class _Page(HTMLParser):
    """The ids, links and text of one built page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in ("id", "name"):
            if values.get(name) and (name == "id" or tag == "a"):
                self.ids.add(str(values[name]))
        for name in ("href", "src"):
            if values.get(name) is not None:
                self.links.append(str(values[name]))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def text_of(path: Path) -> str:
    return html.unescape(" ".join(parse(path).text))


def nav_pages(nav: object) -> Iterator[str]:
    """Every page path of mkdocs.yml's nav (nested sections walked)."""
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from nav_pages(value)


def test_every_nav_page_exists(site: Path) -> None:
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    pages = list(nav_pages(nav))
    assert len(pages) > 30
    missing_sources = [page for page in pages if not (DOCS / page).is_file()]
    missing_built = [page for page in pages if not (site / page).with_suffix(".html").is_file()]
    assert not missing_sources, f"nav pages with no source under docs/: {missing_sources}"
    assert not missing_built, f"nav pages not in the built site: {missing_built}"
    # The generated Reference pages are in the built nav (the hook adds them): the index lists them.
    index_links = parse(site / "index.html").links
    for page in ("reference/cli.html", "reference/settings/router.html", "reference/sdk/cluster.html"):
        assert page in index_links, f"{page} is not in the site's nav"


def broken_links(site: Path) -> list[str]:
    """Every internal link or anchor of the built site that leads nowhere, as 'page -> link'."""
    pages = {path: parse(path) for path in site.rglob("*.html")}
    broken = []
    for path, page in pages.items():
        if path.name == "404.html":
            continue  # a web server's error page: its links are from the server's root, not from disk
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("javascript:", "data:")):
                continue  # external: not this site's to check
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{path.relative_to(site)} -> {link} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(site)} -> {link} (no such anchor)")
    return broken


def test_every_internal_link_and_anchor_resolves(site: Path) -> None:
    broken = broken_links(site)
    assert not broken, f"{len(broken)} broken links:\n" + "\n".join(broken[:50])


def service_settings() -> list[type[BaseSettings]]:
    """Every settings class a service defines (services/*/src/*/settings.py)."""
    found = []
    for module_file in sorted(REPO.glob("services/*/src/*/settings.py")):
        module = importlib.import_module(f"{module_file.parent.name}.settings")
        found += [
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, BaseSettings) and cls.__module__ == module.__name__
        ]
    return found


def test_every_setting_of_every_service_is_in_the_reference(site: Path) -> None:
    classes = service_settings()
    assert len(classes) >= 7  # node, router, replicator, gateway, numaflow source, invoker, analytics
    pages = {path: text_of(path) for path in (site / "reference" / "settings").glob("*.html")}
    missing = []
    for cls in classes:
        name = f"{cls.__module__}.{cls.__name__}"
        page = next((text for text in pages.values() if name in text), None)
        if page is None:
            missing.append(f"{name}: no settings page")
            continue
        prefix = str(cls.model_config.get("env_prefix", ""))
        for field in cls.model_fields:
            for word in (field, f"{prefix}{field}".upper(), "--" + field.replace("_", "-")):
                if not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", page):
                    missing.append(f"{name}: {word}")
    assert not missing, "settings missing from the reference:\n" + "\n".join(missing)


def cli_commands(parser: argparse.ArgumentParser, path: str = "weir") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield f"{path} {name}", child
                yield from cli_commands(child, f"{path} {name}")


def cli_sections(page: Path) -> dict[str, str]:
    """The text of each section of the CLI reference page, by its heading's id."""
    source = page.read_text(encoding="utf-8")
    starts = [(m.start(), m.group(1)) for m in re.finditer(r'<h2 id="([^"]+)"', source)]
    ends = [start for start, _ in starts[1:]] + [len(source)]
    return {
        anchor: html.unescape(re.sub(r"<[^>]+>", " ", source[start:end]))
        for (start, anchor), end in zip(starts, ends, strict=True)
    }


def test_every_cli_command_is_in_the_reference(site: Path) -> None:
    """Each command has its own section (heading id `weir-stream-create`) naming the command and
    every flag it takes (help excepted; the global options every command shares are in the root
    command's section)."""
    from weir_cli.parser import build_parser

    root = build_parser("test")
    sections = cli_sections(site / "reference" / "cli.html")
    commands = list(cli_commands(root))
    assert len(commands) > 40
    shared = {id(action) for action in root._actions}
    missing = []
    for command, parser in [("weir", root), *commands]:
        section = sections.get(command.replace(" ", "-"))
        if section is None or command not in section:
            missing.append(f"{command}: no section")
            continue
        for action in parser._actions:
            own = parser is root or id(action) not in shared
            if own and action.help != argparse.SUPPRESS and not isinstance(action, argparse._HelpAction):
                missing += [f"{command}: {flag}" for flag in action.option_strings if flag not in section]
    assert not missing, "CLI commands missing from the reference:\n" + "\n".join(missing)


STUB_FOLDERS = (
    "libs/weir/src/weir/v1",
    "services/gateway/src/weir_gateway/*/pb",
    "services/invoker/src/weir_invoker/*/pb",
)


def proto_descriptors() -> list[FileDescriptor]:
    """The file descriptors of every generated stub module (what `make proto` compiled from proto/)."""
    found = []
    for folder in STUB_FOLDERS:
        for path in sorted(REPO.glob(f"{folder}/*_pb2.py")):
            parts = path.with_suffix("").parts
            module = ".".join(parts[len(parts) - parts[::-1].index("src") :])  # the import path below src/
            found.append(importlib.import_module(module).DESCRIPTOR)
    return found


def test_every_grpc_service_rpc_and_message_is_in_the_reference(site: Path) -> None:
    """From the generated stubs (not from the generator's own compile): each .proto has its page,
    each service and message its heading there, and each RPC its row."""
    descriptors = proto_descriptors()
    assert len(descriptors) >= 15
    missing = []
    for descriptor in descriptors:
        page = site / "reference" / "grpc" / Path(descriptor.name).with_suffix(".html")
        if not page.is_file():
            missing.append(f"{descriptor.name}: no page")
            continue
        source = page.read_text(encoding="utf-8")
        parsed = parse(page)
        for service in descriptor.services_by_name.values():
            if service.full_name.replace(".", "-") not in parsed.ids:
                missing.append(f"{service.full_name}: no section")
            missing += [method.full_name for method in service.methods if f"<code>{method.name}</code>" not in source]
        missing += [
            f"{message.full_name}: no section"
            for message in descriptor.message_types_by_name.values()
            if message.full_name.replace(".", "-") not in parsed.ids
        ]
    assert not missing, "gRPC APIs missing from the reference:\n" + "\n".join(missing)


def test_every_public_name_of_the_sdk_is_in_the_reference(site: Path) -> None:
    """Each name `import weir` exports (`weir.__all__`) has its own entry (an id ending in
    `.<name>`) on one of the SDK pages, documented or not."""
    import weir

    ids: set[str] = set()
    for page in (site / "reference" / "sdk").glob("*.html"):
        ids |= parse(page).ids
    missing = [name for name in weir.__all__ if not any(anchor.endswith(f".{name}") for anchor in ids)]
    assert len(weir.__all__) > 50
    assert not missing, f"SDK names missing from the reference: {missing}"


def test_user_pages_cite_no_internal_issue_numbers(site: Path) -> None:
    """The project's own issues are cited as 'issue 53' in code and notes; a reader of the site has
    no access to them. (Upstream projects' references, such as kafka-pixy's 'issue #182', stay.)"""
    cited = []
    for path in site.rglob("*.html"):
        relative = path.relative_to(site).as_posix()
        if relative.startswith(INTERNAL_PAGES) or relative.startswith("search"):
            continue
        cited += [f"{relative}: {m.group(0)}" for m in re.finditer(r"\b[Ii]ssues?\s+\d+", text_of(path))]
    assert not cited, "internal issue numbers in user pages:\n" + "\n".join(cited)


def marked_blocks(text: str) -> dict[str, str]:
    """The `<!-- name -->` ... `<!-- /name -->` blocks of a Markdown text, by name."""
    return {m.group(1): m.group(2) for m in re.finditer(r"<!-- ([a-z-]+) -->\n(.*?)<!-- /\1 -->", text, re.S)}


def test_examples_copied_from_the_readme_match_it() -> None:
    """The quick start, context and SDK examples on the site are the README's, which
    tests/test_quickstart.py and tests/test_sdk.py run: a copy that drifts from them fails here."""
    readme = marked_blocks((REPO / "README.md").read_text())
    copies = {
        f"{path.relative_to(DOCS)}: {name}": (name, block)
        for path in sorted(DOCS.rglob("*.md"))
        for name, block in marked_blocks(path.read_text()).items()
    }
    assert {"quickstart", "context-example", "sdk-example"} <= {name for name, _ in copies.values()}
    drifted = [where for where, (name, block) in copies.items() if readme.get(name) != block]
    assert not drifted, f"examples that differ from the README's block of the same name: {drifted}"
