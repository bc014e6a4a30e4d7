"""Render apache.rocketmq.v2's definition, service and admin protos as .proto text from the descriptors
that RocketMQ's official Python client (`rocketmq-python-client` on PyPI) was generated from, into
proto/gateway/weir_gateway/rocketmq_v2/pb/ (then `make proto`).

Run it with a Python that has the client installed (its own virtualenv: its pins are not the
workspace's), e.g.:

    uv venv /tmp/rmq && uv pip install --python /tmp/rmq/bin/python rocketmq-python-client==5.1.2
    /tmp/rmq/bin/python scripts/render_rocketmq_v2_protos.py

The text carries the protocol exactly (every message, field number, type, label, oneof, enum value,
service method and option the descriptors hold) but not the published files' comments, which
descriptors do not keep. tests/test_rocketmq_v2.py checks that protoc makes the client's descriptors
again from the kept files. The only change: service.proto's import of "definition.proto" is the
path the file has under proto/gateway, so the generated module is weir_gateway.rocketmq_v2.pb.*;
the proto package stays `apache.rocketmq.v2` (the wire names are RocketMQ's).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2

NAMES = ("definition", "service", "admin")
PACKAGE = "apache.rocketmq.v2"
KEPT_DIR = "weir_gateway/rocketmq_v2/pb"
OUT = Path(__file__).resolve().parents[1] / "proto" / "gateway" / KEPT_DIR
F = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    value: name[len("TYPE_") :].lower()
    for name, value in F.Type.items()
    if name not in ("TYPE_MESSAGE", "TYPE_ENUM", "TYPE_GROUP")
}
INDENT = "  "


def header(version: str) -> str:
    return (
        "// WEIR: apache.rocketmq.v2 as RocketMQ's official Python client speaks it: rendered by\n"
        "// scripts/render_rocketmq_v2_protos.py from the descriptors in rocketmq-python-client "
        f"{version}\n"
        "// (PyPI; rocketmq/grpc_protocol/*_pb2.py, generated from apache/rocketmq-apis' apache/rocketmq/v2).\n"
        "// The wire protocol as published; the published comments are not in descriptors and so not here.\n"
        '// One import path differs: "definition.proto" is imported as its path under proto/gateway.\n'
        "// tests/test_rocketmq_v2.py checks that protoc makes the client's descriptors from this file.\n"
        "// License of the protocol definitions: Apache-2.0 (The Apache Software Foundation).\n"
    )


def literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def options_of(options: Any) -> list[tuple[str, Any]]:
    return [(field.name, value) for field, value in options.ListFields()]


def bracket(options: Any) -> str:
    listed = options_of(options)
    return " [" + ", ".join(f"{name} = {literal(value)}" for name, value in listed) + "]" if listed else ""


def type_name(field: Any) -> str:
    if field.type in SCALARS:
        return SCALARS[field.type]
    return type_name_of(field.type_name)


def field_line(field: Any, message: Any) -> str:
    nested = {entry.name: entry for entry in message.nested_type}
    short = field.type_name.rsplit(".", 1)[-1]
    if field.label == F.LABEL_REPEATED and short in nested and nested[short].options.map_entry:
        key, value = nested[short].field
        kind = f"map<{type_name(key)}, {type_name(value)}>"
    elif field.label == F.LABEL_REPEATED:
        kind = f"repeated {type_name(field)}"
    elif field.proto3_optional:
        kind = f"optional {type_name(field)}"
    else:
        kind = type_name(field)
    return f"{kind} {field.name} = {field.number}{bracket(field.options)};"


def enum_lines(enum: Any, depth: int) -> list[str]:
    pad = INDENT * depth
    lines = [f"{pad}enum {enum.name} {{"]
    lines += [f"{pad}{INDENT}option {name} = {literal(value)};" for name, value in options_of(enum.options)]
    lines += [f"{pad}{INDENT}{value.name} = {value.number}{bracket(value.options)};" for value in enum.value]
    return [*lines, f"{pad}}}"]


def message_lines(message: Any, depth: int) -> list[str]:
    pad, inner = INDENT * depth, INDENT * (depth + 1)
    lines = [f"{pad}message {message.name} {{"]
    lines += [f"{inner}option {name} = {literal(value)};" for name, value in options_of(message.options)]
    for enum in message.enum_type:
        lines += enum_lines(enum, depth + 1)
    for nested in message.nested_type:
        if not nested.options.map_entry:
            lines += message_lines(nested, depth + 1)
    open_oneof = None
    for field in message.field:
        oneof = field.oneof_index if field.HasField("oneof_index") and not field.proto3_optional else None
        if oneof != open_oneof and open_oneof is not None:
            lines.append(f"{inner}}}")
        if oneof is not None and oneof != open_oneof:
            lines.append(f"{inner}oneof {message.oneof_decl[oneof].name} {{")
        open_oneof = oneof
        lines.append((inner + INDENT if oneof is not None else inner) + field_line(field, message))
    if open_oneof is not None:
        lines.append(f"{inner}}}")
    for reserved in message.reserved_range:
        end = reserved.end - 1
        lines.append(f"{inner}reserved {reserved.start}" + (f" to {end};" if end > reserved.start else ";"))
    lines += [f"{inner}reserved {literal(name)};" for name in message.reserved_name]
    return [*lines, f"{pad}}}"]


def service_lines(service: Any) -> list[str]:
    lines = [f"service {service.name} {{"]
    for method in service.method:
        request = ("stream " if method.client_streaming else "") + type_name_of(method.input_type)
        response = ("stream " if method.server_streaming else "") + type_name_of(method.output_type)
        lines.append(f"{INDENT}rpc {method.name}({request}) returns ({response}) {{}}")
    return [*lines, "}"]


def type_name_of(full: str) -> str:
    """A fully qualified type name (".apache.rocketmq.v2.Resource") as the kept file writes it."""
    name = full.lstrip(".")
    return name[len(PACKAGE) + 1 :] if name.startswith(PACKAGE + ".") else name


def render(file: Any, version: str) -> str:
    lines = [header(version).rstrip("\n"), "", f'syntax = "{file.syntax or "proto2"}";', ""]
    for dependency in file.dependency:
        path = f"{KEPT_DIR}/{dependency}" if dependency in {f"{name}.proto" for name in NAMES} else dependency
        lines.append(f'import "{path}";')
    lines += ["", f"package {file.package};", ""]
    lines += [f"option {name} = {literal(value)};" for name, value in options_of(file.options)]
    for enum in file.enum_type:
        lines += ["", *enum_lines(enum, 0)]
    for message in file.message_type:
        lines += ["", *message_lines(message, 0)]
    for service in file.service:
        lines += ["", *service_lines(service)]
    return "\n".join(lines) + "\n"


def main() -> int:
    from importlib import metadata

    version = metadata.version("rocketmq-python-client")
    OUT.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        module = importlib.import_module(f"rocketmq.grpc_protocol.{name}_pb2")
        file = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        (OUT / f"{name}.proto").write_text(render(file, version))
        print(f"wrote {OUT / f'{name}.proto'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
