#!/usr/bin/env bash
# The Numaflow sidecar image's lock (issue 52): services/numaflow-source/requirements.lock pins, with
# hashes, every third-party package the sidecar needs, resolved from the pyproject.toml files of
# libs/weir, libs/weir-server and services/numaflow-source with --no-config, so WITHOUT the
# workspace's [tool.uv] override-dependencies: pynumaflow 0.14 caps protobuf below 7, and the lock
# (so the image, services/numaflow-source/Dockerfile) has protobuf 6. The three workspace packages
# are not in it: the image installs their wheels with --no-deps.
#
#   bash scripts/numaflow_lock.sh           (make numaflow-lock) re-resolve and write the lock
#   bash scripts/numaflow_lock.sh --check   (make install-check) fail when re-resolving changes it
#
# Both keep the lock's pins where the pyproject files still allow them (uv pip compile prefers the
# versions already in its output file): --upgrade-package NAME ... after the flag moves them on.
# Needs the index; tests/test_numaflow_lock.py checks the lock against the pyproject files offline.
set -euo pipefail
cd "$(dirname "$0")/.."

UV=${UV:-uv}
LOCK=services/numaflow-source/requirements.lock
check=0
if [[ ${1:-} == --check ]]; then
  check=1
  shift
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weir-numaflow-lock.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The workspace packages as local paths: given by name, weir-server's "weir" would resolve from the
# index, where the name is another project's.
printf '%s\n' ./libs/weir ./libs/weir-server ./services/numaflow-source >"$work/requirements.in"
[[ -f $LOCK ]] && cp "$LOCK" "$work/compiled.txt"
# --universal: one lock for any Linux machine the image builds on (markers where a package needs one).
"$UV" pip compile --quiet --no-config --universal --python-version 3.11 --generate-hashes \
  --no-emit-package weir --no-emit-package weir-server --no-emit-package weir-numaflow-source \
  --custom-compile-command "make numaflow-lock" --output-file "$work/compiled.txt" "$@" \
  "$work/requirements.in"
{
  cat <<'EOF'
# The Numaflow sidecar image's third-party packages (services/numaflow-source/Dockerfile installs them
# with hashes required, then the weir, weir-server and weir-numaflow-source wheels with --no-deps).
# Resolved from those three pyproject.toml files WITHOUT the workspace's override-dependencies, so
# with pynumaflow's own cap: protobuf 6. Generated: regenerate with `make numaflow-lock`
# (scripts/numaflow_lock.sh; --upgrade-package NAME to move a pin), never by hand.
# tests/test_numaflow_lock.py checks it against the pyproject files; `make install-check` re-resolves it.
EOF
  cat "$work/compiled.txt"
} >"$work/lock"

if ((check)); then
  if ! diff -u "$LOCK" "$work/lock"; then
    echo "$LOCK is stale: run 'make numaflow-lock' and commit it" >&2
    exit 1
  fi
  echo "  $LOCK matches what its pyproject files resolve to"
else
  cp "$work/lock" "$LOCK"
  echo "wrote $LOCK"
fi
