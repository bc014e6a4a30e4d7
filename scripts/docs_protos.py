"""The gRPC reference pages of the documentation site, generated from `proto/` at build time: one
Markdown page per .proto file with its services (every RPC, its request and response, streaming or
not, and its comment) and its messages and enums (every field with its number, type and comment).

The files are compiled with grpcio-tools' bundled protoc into a descriptor set that keeps the source
comments (`--include_source_info`), so the page says what the .proto says, offline, and cannot go
stale. Used by `scripts/docs_reference.py` (the mkdocs hook).
"""

from __future__ import annotations

import importlib.resources
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pb2

REPO = Path(__file__).resolve().parents[1]
PROTO_ROOT = REPO / "proto"
# Each import root under proto/ and the files compiled from it (the same roots as `make proto`).
PROTO_ROOTS = (PROTO_ROOT, PROTO_ROOT / "gateway", PROTO_ROOT / "invoker")

# SourceCodeInfo path tags (descriptor.proto's field numbers).
_MESSAGE, _ENUM, _SERVICE = 4, 5, 6
_FIELD, _NESTED, _NESTED_ENUM = 2, 3, 4
_ENUM_VALUE, _METHOD = 2, 2

_LABELS = {descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED: "repeated "}
_SCALARS = {
    value: name.removeprefix("TYPE_").lower()
    for name, value in descriptor_pb2.FieldDescriptorProto.Type.items()
    if name not in ("TYPE_MESSAGE", "TYPE_ENUM", "TYPE_GROUP")
}


@dataclass(frozen=True)
class ProtoPage:
    """One generated page: `path` relative to the docs folder, its nav `title`, its Markdown."""

    path: str
    title: str
    content: str


def without_issue_numbers(text: str) -> str:
    """`text` without the project's internal issue references: `(issue 28)` goes, `(issue 32: the
    scrub)` becomes `(the scrub)`, `(..., issue 53)` becomes `(...)` (pure)."""
    numbers = r"issues? \d+(?:(?:, | and )\d+)*"
    text = re.sub(rf" ?\({numbers}\)", "", text)
    text = re.sub(rf"\({numbers}[:;] ", "(", text)
    return re.sub(rf"[,;] {numbers}\)", ")", text)


def inline(text: str) -> str:
    """A comment as one Markdown table cell: lines joined, `|` escaped, and `<`, `>`, `*` escaped
    outside code spans so that `<bucket>` is text, not an HTML tag, and `[...]` no link (pure)."""
    text = without_issue_numbers(" ".join(text.split()))
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("*", r"\*")
        parts[i] = parts[i].replace("[", r"\[").replace("]", r"\]")
    return "`".join(parts).replace("|", r"\|")


def paragraph(text: str) -> str:
    """A leading comment as a Markdown paragraph (blank lines kept as paragraph breaks)."""
    return "\n\n".join(inline(block) for block in text.strip().split("\n\n") if block.strip())


def anchor(full_name: str) -> str:
    """The HTML id of a message, enum or service heading: its full name with dots as dashes."""
    return full_name.strip(".").replace(".", "-")


def proto_files() -> list[tuple[Path, Path]]:
    """Every .proto under proto/ as (import root, file), each under its deepest root."""
    found = []
    for path in sorted(PROTO_ROOT.rglob("*.proto")):
        root = max((r for r in PROTO_ROOTS if path.is_relative_to(r)), key=lambda r: len(r.parts))
        found.append((root, path))
    return found


def compile_protos(files: list[tuple[Path, Path]]) -> descriptor_pb2.FileDescriptorSet:
    """The descriptor set of `files` with source comments, from grpcio-tools' protoc (RuntimeError
    with protoc's exit status when it fails)."""
    from google.rpc import status_pb2
    from grpc_tools import protoc  # type: ignore[import-untyped]

    bundled = str(importlib.resources.files("grpc_tools") / "_proto")
    google_rpc = str(Path(status_pb2.__file__).parents[2])
    includes = [f"-I{root}" for root in PROTO_ROOTS] + [f"-I{google_rpc}", f"-I{bundled}"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "protos.pb"
        args = ["protoc", *includes, "--include_source_info", f"--descriptor_set_out={out}"]
        status = protoc.main([*args, *(str(path.relative_to(root)) for root, path in files)])
        if status != 0:
            raise RuntimeError(f"protoc failed with status {status} on {PROTO_ROOT}")
        return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


class _ProtoWriter:
    """Writes one file's page; `links` maps a full type name to the page and anchor it is on."""

    def __init__(self, proto: descriptor_pb2.FileDescriptorProto, page: str, links: dict[str, str]) -> None:
        self.proto = proto
        self.page = page
        self.links = links
        self.comments = {
            tuple(location.path): location.leading_comments
            or location.trailing_comments
            or "\n\n".join(location.leading_detached_comments)
            for location in proto.source_code_info.location
        }
        self.lines: list[str] = []

    def comment(self, path: tuple[int, ...]) -> str:
        return self.comments.get(path, "").strip()

    def type_link(self, type_name: str) -> str:
        """A message or enum type as a link to where it is documented (plain text for a type from
        outside proto/, such as google.protobuf's)."""
        name = type_name.strip(".")
        target = self.links.get(name)
        if target is None:
            return f"`{name}`"
        page, _, fragment = target.partition("#")
        href = f"#{fragment}" if page == self.page else f"{_relative(self.page, page)}#{fragment}"
        return f"[`{name.rsplit('.', 1)[-1]}`]({href})"

    def write(self) -> str:
        proto = self.proto
        self.lines += [f"# {proto.name}", "", f"Package `{proto.package}`, from `proto/{proto.name}`.", ""]
        if header := self.comment((12,)) or self.comment((2,)):  # the syntax or package statement's comment
            self.lines += [paragraph(header), ""]
        for i, service in enumerate(proto.service):
            self.service(service, (_SERVICE, i))
        for i, message in enumerate(proto.message_type):
            self.message(message, (_MESSAGE, i), proto.package)
        for i, enum in enumerate(proto.enum_type):
            self.enum(enum, (_ENUM, i), proto.package)
        return "\n".join(self.lines) + "\n"

    def service(self, service: descriptor_pb2.ServiceDescriptorProto, path: tuple[int, ...]) -> None:
        full = f"{self.proto.package}.{service.name}"
        self.lines += [f"## service {service.name} {{#{anchor(full)}}}", ""]
        if text := self.comment(path):
            self.lines += [paragraph(text), ""]
        self.lines += ["| RPC | request | response | description |", "|---|---|---|---|"]
        for j, method in enumerate(service.method):
            request = ("stream " if method.client_streaming else "") + self.type_link(method.input_type)
            response = ("stream " if method.server_streaming else "") + self.type_link(method.output_type)
            text = inline(self.comment((*path, _METHOD, j)))
            self.lines.append(f"| `{method.name}` | {request} | {response} | {text} |")
        self.lines.append("")

    def message(self, message: descriptor_pb2.DescriptorProto, path: tuple[int, ...], scope: str) -> None:
        full = f"{scope}.{message.name}"
        if message.options.map_entry:
            return
        self.lines += [f"## message {full.removeprefix(self.proto.package + '.')} {{#{anchor(full)}}}", ""]
        if text := self.comment(path):
            self.lines += [paragraph(text), ""]
        if message.field:
            self.lines += ["| field | number | type | description |", "|---|---|---|---|"]
            for j, field in enumerate(message.field):
                text = inline(self.comment((*path, _FIELD, j)))
                self.lines.append(f"| `{field.name}` | {field.number} | {self.field_type(field, message)} | {text} |")
            self.lines.append("")
        for k, nested in enumerate(message.nested_type):
            self.message(nested, (*path, _NESTED, k), full)
        for k, enum in enumerate(message.enum_type):
            self.enum(enum, (*path, _NESTED_ENUM, k), full)

    def field_type(self, field: descriptor_pb2.FieldDescriptorProto, owner: descriptor_pb2.DescriptorProto) -> str:
        entry = next((n for n in owner.nested_type if n.options.map_entry and field.type_name.endswith(n.name)), None)
        if entry is not None:
            key, value = entry.field
            return f"map&lt;{self.field_type(key, entry)}, {self.field_type(value, entry)}&gt;"
        label = _LABELS.get(field.label, "optional " if field.proto3_optional else "")
        if field.type_name:
            return label + self.type_link(field.type_name)
        return f"{label}`{_SCALARS[field.type]}`"

    def enum(self, enum: descriptor_pb2.EnumDescriptorProto, path: tuple[int, ...], scope: str) -> None:
        full = f"{scope}.{enum.name}"
        self.lines += [f"## enum {full.removeprefix(self.proto.package + '.')} {{#{anchor(full)}}}", ""]
        if text := self.comment(path):
            self.lines += [paragraph(text), ""]
        self.lines += ["| value | number | description |", "|---|---|---|"]
        for j, value in enumerate(enum.value):
            text = inline(self.comment((*path, _ENUM_VALUE, j)))
            self.lines.append(f"| `{value.name}` | {value.number} | {text} |")
        self.lines.append("")


def _relative(source: str, target: str) -> str:
    """The link from page `source` to page `target`, both relative to the docs folder."""
    return Path(os.path.relpath(target, Path(source).parent)).as_posix()


def _types(proto: descriptor_pb2.FileDescriptorProto) -> list[str]:
    """The full names of every message and enum `proto` defines, nested ones included."""
    names = [f"{proto.package}.{enum.name}" for enum in proto.enum_type]
    stack = [(proto.package, message) for message in proto.message_type]
    while stack:
        scope, message = stack.pop()
        full = f"{scope}.{message.name}"
        names.append(full)
        names += [f"{full}.{enum.name}" for enum in message.enum_type]
        stack += [(full, nested) for nested in message.nested_type]
    return names


def proto_pages(folder: str = "reference/grpc") -> list[ProtoPage]:
    """One page per .proto file under proto/, at `<folder>/<file path>.md`, titled by its path."""
    files = proto_files()
    ours = {str(path.relative_to(root)) for root, path in files}
    descriptors = [proto for proto in compile_protos(files).file if proto.name in ours]
    page_of = {proto.name: f"{folder}/{proto.name.removesuffix('.proto')}.md" for proto in descriptors}
    links = {
        name: f"{page_of[proto.name]}#{anchor(name)}"
        for proto in descriptors
        for name in _types(proto) + [f"{proto.package}.{s.name}" for s in proto.service]
    }
    return [
        ProtoPage(page_of[proto.name], proto.name, _ProtoWriter(proto, page_of[proto.name], links).write())
        for proto in sorted(descriptors, key=lambda p: p.name)
    ]
