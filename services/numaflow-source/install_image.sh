#!/usr/bin/env bash
# How the sidecar image installs the sidecar (services/numaflow-source/Dockerfile runs this, and
# scripts/check_install.sh runs it into a fresh virtualenv, so the check installs what the image does):
#   install_image.sh VENV WHEEL...   VENV: a new virtualenv; WHEEL...: weir, weir-server and
#                                    weir-numaflow-source's wheels
# 1. exactly the packages of requirements.lock (beside this file), every one checked against its
#    hashes: the lock is resolved without the workspace's override, so protobuf 6, as pynumaflow asks;
# 2. the three Weir wheels with --no-deps (their dependencies are the lock's);
# 3. `uv pip check`: every installed package's declared requirements hold (pynumaflow's protobuf<7
#    among them), so a lock that drifted from the pyproject files fails the build here.
set -euo pipefail
UV=${UV:-uv}
venv=$1
shift
lock=$(dirname "$0")/requirements.lock
"$UV" venv --quiet --no-config --python 3.11 "$venv"
"$UV" pip sync --quiet --no-config --python "$venv/bin/python" --require-hashes "$lock"
"$UV" pip install --quiet --no-config --python "$venv/bin/python" --no-deps "$@"
"$UV" pip check --quiet --no-config --python "$venv/bin/python"
