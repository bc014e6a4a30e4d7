"""The gateway's RocketMQ v2 front door (`apache.rocketmq.v2.MessagingService`), proven with a client
nobody here wrote: RocketMQ's official Python client (`rocketmq-python-client` 5.1.2, PyPI), in a
virtualenv of its own (tests/rocketmq_client_env.py), run as a subprocess against a real cluster and
gateway over the real transport. Also: the kept protos are the protocol the client was built from.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from tests.rocketmq_client_env import client_python

ROOT = Path(__file__).resolve().parents[1]
PROTO_NAMES = ("definition", "service", "admin")
KEPT_PREFIX = "weir_gateway/rocketmq_v2/pb/"


@pytest.fixture(scope="module")
def rocketmq_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return client_python(tmp_path_factory.mktemp("rocketmq-client"))


def client_descriptors(python: Path) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """The FileDescriptorProtos the client's rocketmq/grpc_protocol/*_pb2.py were generated with."""
    program = (
        "import importlib, json\n"
        f"names = {list(PROTO_NAMES)!r}\n"
        "print(json.dumps({n: importlib.import_module(f'rocketmq.grpc_protocol.{n}_pb2')"
        ".DESCRIPTOR.serialized_pb.hex() for n in names}))\n"
    )
    completed = subprocess.run([str(python), "-c", program], capture_output=True, text=True, timeout=60, check=True)
    return {
        name: descriptor_pb2.FileDescriptorProto.FromString(bytes.fromhex(text))
        for name, text in json.loads(completed.stdout).items()
    }


def kept_descriptor(name: str) -> descriptor_pb2.FileDescriptorProto:
    """The gateway's generated descriptor of the kept `name`.proto, with the one import path that
    differs put back to the client's (its files sit next to each other: "definition.proto")."""
    from weir_gateway.rocketmq_v2.pb import admin_pb2, definition_pb2, service_pb2

    module = {"definition": definition_pb2, "service": service_pb2, "admin": admin_pb2}[name]
    file = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
    file.name = file.name.removeprefix(KEPT_PREFIX)
    file.dependency[:] = [dependency.removeprefix(KEPT_PREFIX) for dependency in file.dependency]
    return file


def test_the_kept_protos_are_the_protocol_the_official_client_speaks(rocketmq_python: Path) -> None:
    """Every message, field (number, type, label, oneof), enum value, service method and option of
    the kept v2 protos equals the client's, byte for byte once serialized; only the file paths differ."""
    theirs = client_descriptors(rocketmq_python)
    for name in PROTO_NAMES:
        ours = kept_descriptor(name)
        assert ours.SerializeToString(deterministic=True) == theirs[name].SerializeToString(deterministic=True), name
        assert ours.package == "apache.rocketmq.v2"


def test_the_kept_protos_are_what_the_renderer_makes(rocketmq_python: Path) -> None:
    """scripts/render_rocketmq_v2_protos.py, run in the client's env, writes the kept files unchanged
    (into a copy of the output directory, so the checkout is not touched)."""
    script = ROOT / "scripts" / "render_rocketmq_v2_protos.py"
    program = (
        "import runpy, sys, pathlib\n"
        f"module = runpy.run_path({str(script)!r}, run_name='render')\n"
        "from importlib import import_module, metadata\n"
        "from google.protobuf import descriptor_pb2\n"
        "out = {}\n"
        "for name in module['NAMES']:\n"
        "    pb = import_module(f'rocketmq.grpc_protocol.{name}_pb2')\n"
        "    file = descriptor_pb2.FileDescriptorProto.FromString(pb.DESCRIPTOR.serialized_pb)\n"
        "    out[name] = module['render'](file, metadata.version('rocketmq-python-client'))\n"
        "import json; print(json.dumps(out))\n"
    )
    completed = subprocess.run(
        [str(rocketmq_python), "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    rendered = json.loads(completed.stdout)
    kept = ROOT / "proto" / "gateway" / "weir_gateway" / "rocketmq_v2" / "pb"
    for name in PROTO_NAMES:
        assert rendered[name] == (kept / f"{name}.proto").read_text(), name
