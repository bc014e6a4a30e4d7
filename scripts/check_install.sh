#!/usr/bin/env bash
# Every Weir package installs on its own, outside the workspace, as a user would install it (issue 52):
#   1. the SDK (libs/weir) at its declared floors (the lowest protobuf and grpcio in its
#      pyproject.toml), every weir.v1 stub and weir module imported with warnings as errors; the same
#      for weir-server, which the Numaflow sidecar builds on with the same ranges;
#   2. each workspace member in a clean virtualenv of its own: its wheel and the wheels of its
#      workspace dependencies, everything else resolved from the index with no overrides (the
#      workspace's override of pynumaflow's protobuf cap does not apply: the sidecar gets protobuf 6),
#      then every module of its package imported; then the Numaflow sidecar as its image installs it
#      (services/numaflow-source/install_image.sh: its own requirements.lock with hashes, protobuf 6,
#      and the three wheels with --no-deps), after checking the lock is what its pyproject files
#      resolve to (scripts/numaflow_lock.sh --check);
#   3. the CLI with `uv tool install`: `weir --version`, then `weir cluster up` (the processes it
#      starts run from the tool's environment), the README's SDK example run against it from the
#      SDK's floor virtualenv (protobuf 5 against the servers' 7), and the Numaflow sidecar from the
#      image's virtualenv (protobuf 6) reading a stream as Numaflow would; then `weir cluster down`.
# Built wheels and virtualenvs live in one temporary directory, removed at the end. Set
# WEIR_INSTALL_CHECK_CLUSTER=0 to skip the cluster part of step 3.
set -euo pipefail
cd "$(dirname "$0")/.."

UV=${UV:-uv}
PYTHON=3.11
# --no-config on every uv command below: from this directory uv would read the workspace's
# [tool.uv] settings, whose override-dependencies would replace the packages' own protobuf pins.
work=$(mktemp -d "${TMPDIR:-/tmp}/weir-install-check.XXXXXX")
wheels=$work/wheels
weir_bin=$work/tool-bin/weir
cluster_dir=$work/cluster
export XDG_STATE_HOME=$work/state  # `weir cluster up` records its last cluster there, not in the user's home

cleanup() {
  if [[ -x $weir_bin && -f $cluster_dir/cluster.json ]]; then
    "$weir_bin" cluster down --data-dir "$cluster_dir" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # so that the EXIT trap stops the cluster then too

started=$SECONDS
say() { printf '[install-check %3ds] %s\n' "$((SECONDS - started))" "$*"; }

new_venv() {  # new_venv DIR: a clean virtualenv, nothing installed
  "$UV" venv --quiet --no-config --python "$PYTHON" "$1"
}

install() {  # install VENV REQUIREMENT...: resolve against the index, print the resolver's error on failure
  local venv=$1 log=$work/install.log
  shift
  if ! "$UV" pip install --quiet --no-config --python "$venv/bin/python" "$@" >"$log" 2>&1; then
    cat "$log"
    return 1
  fi
}

say "building the wheels of every workspace member"
"$UV" build --quiet --all-packages --wheel --out-dir "$wheels" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }

# name<TAB>top-level module<TAB>wheel paths (its own first, then its workspace dependencies, transitively),
# and the SDK's floors, from the pyproject files.
python3 - "$wheels" >"$work/members.tsv" <<'EOF'
import re, sys, tomllib
from pathlib import Path

wheels = Path(sys.argv[1])
root = tomllib.loads(Path("pyproject.toml").read_text())
projects = {}
for member in root["tool"]["uv"]["workspace"]["members"]:
    project = tomllib.loads((Path(member) / "pyproject.toml").read_text())
    packages = project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    projects[project["project"]["name"]] = (project, Path(packages[0]).name)

def requirement_name(requirement):
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0]

def closure(name, seen):
    if name not in seen:
        seen.append(name)
        for requirement in projects[name][0]["project"].get("dependencies", []):
            if requirement_name(requirement) in projects:
                closure(requirement_name(requirement), seen)
    return seen

def wheel(name):
    found = sorted(wheels.glob(name.replace("-", "_") + "-*.whl"))
    assert len(found) == 1, (name, found)
    return str(found[0])

for name, (_project, module) in projects.items():
    print("\t".join([name, module, *map(wheel, closure(name, []))]))
floors = {requirement_name(r): r for r in projects["weir"][0]["project"]["dependencies"]}
for package in ("protobuf", "grpcio"):
    print("\t".join(["floor", package, re.search(r">=\s*([\w.]+)", floors[package]).group(1)]))
EOF
sdk_wheel=$(awk -F'\t' '$1 == "weir" {print $3}' "$work/members.tsv")
protobuf_floor=$(awk -F'\t' '$1 == "floor" && $2 == "protobuf" {print $3}' "$work/members.tsv")
grpcio_floor=$(awk -F'\t' '$1 == "floor" && $2 == "grpcio" {print $3}' "$work/members.tsv")

say "weir (SDK) at its floors: protobuf==$protobuf_floor grpcio==$grpcio_floor"
new_venv "$work/sdk-floor"
install "$work/sdk-floor" "$sdk_wheel" "protobuf==$protobuf_floor" "grpcio==$grpcio_floor"
"$work/sdk-floor/bin/python" -W error - <<'EOF'
import importlib, pkgutil
import google.protobuf, grpc
import weir.v1
from weir import Client  # noqa: F401
for module in pkgutil.iter_modules(weir.v1.__path__, "weir.v1."):
    importlib.import_module(module.name)
for module in pkgutil.iter_modules(weir.__path__, "weir."):
    importlib.import_module(module.name)
print(f"  weir OK (protobuf {google.protobuf.__version__}, grpcio {grpc.__version__})")
EOF
read -r -a server_wheels <<<"$(awk -F'\t' '$1 == "weir-server" {$1 = $2 = ""; print}' "$work/members.tsv")"
say "weir-server (the sidecar's base, with the same ranges) at those floors"
new_venv "$work/server-floor"
install "$work/server-floor" "${server_wheels[@]}" "protobuf==$protobuf_floor" "grpcio==$grpcio_floor"
"$work/server-floor/bin/python" -W error - <<'EOF'
import importlib, pkgutil
import google.protobuf, grpc
import weir_server
for module in pkgutil.iter_modules(weir_server.__path__, "weir_server."):
    importlib.import_module(module.name)
print(f"  every weir_server module imports (protobuf {google.protobuf.__version__}, grpcio {grpc.__version__})")
EOF

import_all() {  # import_all VENV NAME MODULE: import every module of MODULE (the package of NAME) in VENV
  "$1/bin/python" - "$2" "$3" <<'EOF'
import importlib, pkgutil, sys
from importlib import metadata
name, module = sys.argv[1:]
DEV_ONLY = {"restate", "hypercorn"}  # the demo's handler deployments (development dependencies; it skips that step)
package = importlib.import_module(module)
for found in pkgutil.walk_packages(package.__path__, module + "."):
    if not found.name.endswith("__main__"):
        try:
            importlib.import_module(found.name)
        except ModuleNotFoundError as missing:
            if missing.name not in DEV_ONLY:
                raise
versions = ", ".join(f"{dist} {metadata.version(dist)}" for dist in ("protobuf", "grpcio"))
print(f"  {name} OK: installs on its own and every {module} module imports ({versions})")
EOF
}

# Each member on its own: its wheel plus its workspace dependencies' wheels, the rest from the index.
while IFS=$'\t' read -r name module own_and_deps; do
  [[ $name == floor ]] && continue
  read -r -a member_wheels <<<"$own_and_deps"
  venv=$work/venv-$name
  new_venv "$venv"
  if ! install "$venv" "${member_wheels[@]}"; then
    say "FAILED: $name does not install on its own (the resolver's answer is above)"
    exit 1
  fi
  import_all "$venv" "$name" "$module"
done <"$work/members.tsv"

say "the Numaflow sidecar as its image installs it: its own lock, checked first (scripts/numaflow_lock.sh --check), then install_image.sh"
UV=$UV bash scripts/numaflow_lock.sh --check
read -r -a sidecar_wheels <<<"$(awk -F'\t' '$1 == "weir-numaflow-source" {$1 = $2 = ""; print}' "$work/members.tsv")"
sidecar_venv=$work/numaflow-image
UV=$UV bash services/numaflow-source/install_image.sh "$sidecar_venv" "${sidecar_wheels[@]}"
import_all "$sidecar_venv" weir-numaflow-source weir_numaflow_source
"$sidecar_venv/bin/python" -c 'import sys; from importlib.metadata import version; v = version("protobuf")
sys.exit(None if v.startswith("6.") else f"the image lock has protobuf {v}, not 6 as pynumaflow asks")'

say "weir-cli with uv tool install"
# Its workspace dependencies come from the local wheels, named in a constraints file: given by name
# alone they would resolve from the index, where the name `weir` is another project's.
for wheel in "$wheels"/*.whl; do
  name=$(basename "$wheel" | cut -d- -f1)
  echo "${name//_/-} @ file://$wheel"
done >"$work/local-wheels.txt"
UV_TOOL_DIR=$work/tools UV_TOOL_BIN_DIR=$work/tool-bin "$UV" tool install --quiet --no-config --python "$PYTHON" \
  --constraints "$work/local-wheels.txt" weir-cli >"$work/tool.log" 2>&1 || { cat "$work/tool.log"; exit 1; }
echo "  weir --version: $("$weir_bin" --version)"

if [[ ${WEIR_INSTALL_CHECK_CLUSTER:-1} != 0 ]]; then
  say "weir cluster up from the uv tool install (every process it starts by default), the README's SDK example from the floor venv"
  "$weir_bin" --json cluster up --data-dir "$cluster_dir" >"$work/up.json" 2>"$work/up.log" || { cat "$work/up.log"; exit 1; }
  routers=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["router_address"])' "$work/up.json")
  python3 - "$work/example.py" <<'EOF'
import re, sys
from pathlib import Path
found = re.search(r"<!-- sdk-example -->\n```python\n(.*?)```\n<!-- /sdk-example -->", Path("README.md").read_text(), re.S)
Path(sys.argv[1]).write_text(found.group(1))
EOF
  WEIR_ROUTERS=$routers "$work/sdk-floor/bin/python" "$work/example.py" | sed 's/^/  /'
  say "the Numaflow sidecar as its image installs it (protobuf 6) reads that cluster as Numaflow's data plane would"
  mkdir "$work/numaflow"
  "$sidecar_venv/bin/python" - "$routers" "$work/numaflow" <<'EOF'
import asyncio, os, signal, subprocess, sys, time
from pathlib import Path

import google.protobuf
from weir import Client, stream_config
from weir_numaflow_source.data_plane import DataPlane

routers, work = sys.argv[1], Path(sys.argv[2])
stream, expected = "install-check-numaflow", {b"message %d" % n for n in range(50)}
settings = {"ROUTERS": routers, "STREAM": stream, "SOCKET_PATH": work / "source.sock", "HOST": "127.0.0.1",
            "SERVER_INFO_FILE": work / "server-info", "METRICS_PORT": 0, "PLAINTEXT": "true", "READY_FILE": work / "ready"}


async def read_all() -> tuple[set[bytes], int]:
    read: set[bytes] = set()
    async with DataPlane(str(work / "source.sock")) as source:
        deadline = time.monotonic() + 60
        while read != expected and time.monotonic() < deadline:
            data = await source.read(500, 1000)
            read.update(datum.payload for datum in data)
            await source.ack(data)
        return read, await source.pending()


async def publish() -> None:
    async with Client(routers) as client:
        await client.create_stream(stream_config(stream, partitions=2))
        for payload in sorted(expected):
            await client.publish(stream, "events", payload)


asyncio.run(publish())
env = {**os.environ, **{"WEIR_NUMAFLOW_SOURCE_" + key: str(value) for key, value in settings.items()}}
log = open(work / "sidecar.log", "wb")
sidecar = subprocess.Popen([str(Path(sys.executable).parent / "weir-numaflow-source")], env=env, stdout=log, stderr=log)
try:
    deadline = time.monotonic() + 60
    while not (work / "ready").exists():
        if sidecar.poll() is not None or time.monotonic() > deadline:
            sys.exit("the sidecar did not start:\n" + (work / "sidecar.log").read_text())
        time.sleep(0.1)
    read, pending = asyncio.run(read_all())
finally:
    sidecar.send_signal(signal.SIGTERM)
    stopped = sidecar.wait(30)
if read != expected or pending or stopped:
    sys.exit(f"read {len(read)} of {len(expected)}, {pending} pending, exit {stopped}:\n" + (work / "sidecar.log").read_text())
print(f"  weir-numaflow-source OK on protobuf {google.protobuf.__version__}: read {len(read)} messages once, none pending")
EOF
  "$weir_bin" cluster down --data-dir "$cluster_dir" >/dev/null 2>&1
fi
say "every package installs on its own"
