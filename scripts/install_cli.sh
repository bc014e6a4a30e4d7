#!/usr/bin/env bash
# `make install-cli`: put this checkout's `weir` command on your PATH, to use from any directory
# (`uv tool install`, into uv's tool directory; `weir` lands in ~/.local/bin, or $UV_TOOL_BIN_DIR).
# The packages are not on PyPI (where the name `weir` is another project's), so the workspace's own
# wheels are built into dist/ and named in a constraints file; everything else comes from the index.
# Run it again after pulling to update; `uv tool uninstall weir-cli` removes it.
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-uv}
rm -rf dist && mkdir -p dist
"$UV" build --quiet --all-packages --wheel --out-dir dist
for wheel in dist/*.whl; do
  name=$(basename "$wheel" | cut -d- -f1)
  echo "${name//_/-} @ file://$PWD/$wheel"
done >dist/local-wheels.txt
"$UV" tool install --force --no-config --python 3.11 --constraints dist/local-wheels.txt weir-cli
echo "installed: $(command -v weir || echo "weir (add $("$UV" tool dir --bin) to your PATH)")"
