# Weir development tasks. Every target installs what it needs through `uv sync` (locked).
SHELL := /bin/bash
UV ?= uv
PROTO_OUT := libs/weir/src
PROTOS := $(wildcard proto/weir/v1/*.proto)
# The SDK's stubs come from an older generator than the servers' (grpcio-tools 1.64.3, protoc 26.1):
# its gencode (5.26.1) loads on every protobuf runtime from 5.26.1 to 7.x, and its _pb2_grpc files
# ask for grpcio >= 1.64.3, the SDK's declared floors (libs/weir/pyproject.toml). In an env of its own,
# since the workspace's grpcio-tools (1.85.1) generates the gateway's and the invoker's stubs.
SDK_GRPC_TOOLS := grpcio-tools==1.64.3
SDK_PROTOC = $(UV) run --no-project --isolated --python 3.11 --with $(SDK_GRPC_TOOLS) python -m grpc_tools.protoc
# Foreign protocols the gateway serves, generated into its package (import path = proto path).
GATEWAY_PROTO_OUT := services/gateway/src
GATEWAY_PROTOS := $(wildcard proto/gateway/weir_gateway/*/pb/*.proto)
# RocketMQ v1 imports google/rpc/*.proto: googleapis-common-protos (an SDK dependency) ships them.
GOOGLE_RPC_PROTOS = $(shell $(UV) run python -c "import pathlib, google.rpc.status_pb2 as m; print(pathlib.Path(m.__file__).parents[2])")
# The Restate service protocol (the seed laid out on lines), generated into the invoker's package.
INVOKER_PROTO_OUT := services/invoker/src
INVOKER_PROTOS := $(wildcard proto/invoker/weir_invoker/*/pb/*.proto)
GENERATED := $(PROTO_OUT)/weir/v1 $(GATEWAY_PROTO_OUT)/weir_gateway/*/pb $(INVOKER_PROTO_OUT)/weir_invoker/*/pb

.PHONY: preflight setup install-cli proto proto-check numaflow-lock lint docs layers compose-check install-check test test-fast run node router replicator invoker analytics bench bench-gateway bench-gateway-workers bench-rocketmq bench-waymaker bench-kv bench-objects bench-numaflow bench-invoker bench-analytics bench-security bench-scheduled bench-node bench-cluster bench-profile bench-commit bench-storage bench-node-commit bench-scale bench-startup reliability clean up down

setup:  ## install the workspace (all services + dev tools) from uv.lock
	@command -v $(UV) >/dev/null || python3 -m pip install --quiet "uv>=0.9"
	$(UV) sync --locked --all-packages

install-cli:  ## put this checkout's `weir` on your PATH for use from any directory (uv tool install of the workspace's wheels)
	@command -v $(UV) >/dev/null || python3 -m pip install --quiet "uv>=0.9"
	bash scripts/install_cli.sh

proto: setup  ## regenerate the Python stubs (+ .pyi) from proto/
	$(SDK_PROTOC) -I proto --python_out=$(PROTO_OUT) --pyi_out=$(PROTO_OUT) \
		--grpc_python_out=$(PROTO_OUT) $(PROTOS)
	$(UV) run python -m grpc_tools.protoc -I proto/gateway -I $(GOOGLE_RPC_PROTOS) --python_out=$(GATEWAY_PROTO_OUT) \
		--pyi_out=$(GATEWAY_PROTO_OUT) --grpc_python_out=$(GATEWAY_PROTO_OUT) $(GATEWAY_PROTOS)
	$(UV) run python -m grpc_tools.protoc -I proto/invoker --python_out=$(INVOKER_PROTO_OUT) \
		--pyi_out=$(INVOKER_PROTO_OUT) $(INVOKER_PROTOS)

proto-check: proto  ## fail when the committed stubs differ from what proto/ generates
	@git diff --exit-code -- $(GENERATED) || { echo "stubs are stale: run 'make proto' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- $(GENERATED))" || { echo "untracked generated stubs: commit them"; exit 1; }

numaflow-lock:  ## re-resolve the Numaflow sidecar image's lock (services/numaflow-source/requirements.lock: protobuf 6, no workspace override); needs the index
	@command -v $(UV) >/dev/null || python3 -m pip install --quiet "uv>=0.9"
	UV=$(UV) bash scripts/numaflow_lock.sh

lint: setup  ## ruff + mypy on our code (generated stubs excluded) + the size ceilings (scripts/check_sizes.py) + the layer contracts (.importlinter)
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(UV) run python scripts/check_sizes.py
	$(UV) run mypy libs/weir/src libs/weir-server/src libs/weir-cli/src services/partition-node/src services/router/src services/replicator/src \
		services/spark-analytics/src services/gateway/src services/numaflow-source/src services/invoker/src tests bench
	$(UV) run lint-imports --no-cache

layers: setup  ## print the packages by floor and every import cycle, from the imports alone (scripts/layers.py; FLOORS=package also lists its modules by floor)
	$(UV) run python scripts/layers.py $(if $(FLOORS),--floors $(FLOORS))

docs: setup  ## the documentation site (mkdocs-material, strict: a broken link or a missing page fails) into site/: open site/index.html, no server needed; the Reference pages (settings, CLI, gRPC APIs, SDK) are generated from the code at build time
	NO_MKDOCS_2_WARNING=1 $(UV) run mkdocs build --strict

install-check:  ## every package installs on its own into a clean virtualenv (the SDK also at its lowest protobuf and grpcio), the Numaflow sidecar from its image lock (fresh, protobuf 6), the CLI with uv tool install (scripts/check_install.sh)
	@command -v $(UV) >/dev/null || python3 -m pip install --quiet "uv>=0.9"
	UV=$(UV) bash scripts/check_install.sh

compose-check:  ## validate the deployment without a Docker engine: compose file (docker compose v2, else docker-compose v1; says which), Prometheus config and rules, dashboard JSON
	@if docker compose version >/dev/null 2>&1; then compose="docker compose"; note=""; \
	elif command -v docker-compose >/dev/null 2>&1; then compose=docker-compose; \
		note=" (v1, end of life: docker compose v2 is used where it is installed)"; \
	else echo "compose-check: neither docker compose (v2) nor docker-compose (v1) is installed; make preflight installs one" >&2; \
		exit 1; fi; \
	echo "compose-check: validating deploy/docker-compose.yml with $$($$compose version | head -1)$$note"; \
	$$compose -f deploy/docker-compose.yml config -q
	promtool check config --syntax-only deploy/prometheus/prometheus.yml  # its CA and token live in the certs volume
	promtool check rules deploy/prometheus/rules.yml
	python3 -m json.tool deploy/grafana/dashboards/weir.json >/dev/null

up:  ## docker compose up: the whole stack (needs a Docker engine; Grafana on :3000, Prometheus on :9090)
	docker compose -f deploy/docker-compose.yml up -d --build

down:  ## docker compose down (volumes kept; add -v by hand to drop them)
	docker compose -f deploy/docker-compose.yml down

preflight:  ## say (and install where we can: root with apt-get) what the slow tier needs from the system: java 17+, prometheus, promtool, docker compose (v2, else docker-compose v1)
	@bash scripts/preflight.sh

test: setup preflight  ## every test tier: unit, integration over real gRPC, crash tests (a test whose system tool is missing is skipped, saying how to install it)
	$(UV) run pytest -q --durations=30

test-fast: setup  ## everything except the slow (crash/fault) tier; says what the slow tier would need, installs nothing
	@WEIR_PREFLIGHT_INSTALL=0 bash scripts/preflight.sh
	$(UV) run pytest -q -m "not slow"

reliability: setup preflight  ## the fault matrices: SIGKILL/SIGSTOP and network partitions and loss (as root) under ack-all load (docs/reliability.md), power loss and flipped bits (docs/durability.md; needs FUSE)
	WEIR_RELIABILITY_REPORT=docs/reliability.md WEIR_DURABILITY_REPORT=docs/durability.md \
		$(UV) run pytest -q -s tests/test_reliability.py tests/test_network_faults.py tests/test_durability.py

run: setup  ## the main job: bring up a local cluster, run a demo workload through it, stop it
	$(UV) run weir demo

node: setup  ## run one partition node in the foreground (settings from WEIR_NODE_* variables)
	$(UV) run weir-partition-node

router: setup  ## run one router in the foreground (settings from WEIR_ROUTER_* variables)
	$(UV) run weir-router

replicator: setup  ## run one replicator in the foreground (settings from WEIR_REPLICATOR_* variables)
	$(UV) run weir-replicator

invoker: setup  ## run one invoker in the foreground (settings from WEIR_INVOKER_* variables; routers 127.0.0.1:7501 unless WEIR_INVOKER_ROUTERS)
	$(UV) run weir-invoker

analytics: setup  ## run the spark-analytics job in the foreground (WEIR_ANALYTICS_* variables; needs Java 17+)
	$(UV) run weir-analytics

bench: setup  ## Weir vs NATS JetStream vs Redis Streams, same machine, same run: JSON on stdout, Markdown in bench-results/
	@mkdir -p bench-results
	$(UV) run python -m bench.compare --out bench-results/compare.json --report bench-results/compare.md
	$(UV) run python -m bench.gateway_bench --out bench-results/gateway.json
	$(UV) run python -m bench.scheduled_bench --out bench-results/scheduled.json
	$(UV) run python -m bench.rocketmq_bench --out bench-results/rocketmq.json
	$(UV) run python -m bench.waymaker_bench --out bench-results/waymaker.json
	$(UV) run python -m bench.kv_bench --out bench-results/kv.json
	$(UV) run python -m bench.objects_bench --out bench-results/objects.json
	$(UV) run python -m bench.numaflow_bench --out bench-results/numaflow.json
	$(UV) run python -m bench.invoker_bench --out bench-results/invoker.json
	$(UV) run python -m bench.analytics_bench --out bench-results/analytics.json
	$(UV) run python -m bench.security_bench --out bench-results/security.json
	$(UV) run python -m bench.scrub_bench --out bench-results/scrub.json
	$(UV) run python -m bench.startup_bench --out bench-results/startup.json

bench-gateway: setup  ## the kafka-pixy front door next to a bare grpc.aio unary call, same run: JSON on stdout
	$(UV) run python -m bench.gateway_bench

bench-gateway-workers: setup  ## the gateway with 1 and with 2 workers (kafka-pixy Produce, RocketMQ SendMessage), same run: JSON on stdout
	$(UV) run python -m bench.gateway_workers_bench

bench-rocketmq: setup  ## the RocketMQ v1 and v2 (RocketMQ 5) front doors next to the native SDK, same run: JSON on stdout
	$(UV) run python -m bench.rocketmq_bench

bench-waymaker: setup  ## the streams seed's front door (waymaker.streams) next to the native SDK, same run: JSON on stdout
	$(UV) run python -m bench.waymaker_bench

bench-kv: setup  ## key-value put and get: Weir's buckets (router and SDK) next to NATS JetStream KV and Redis, same run: JSON on stdout
	$(UV) run python -m bench.kv_bench

bench-objects: setup  ## object put and get MiB/s: Weir's object store (SDK and router) next to NATS JetStream's, same run: JSON on stdout
	$(UV) run python -m bench.objects_bench

bench-invoker: setup  ## invocations/s through the invoker (Restate SDK handlers from a stream; journal replicated 3 ways): JSON on stdout
	$(UV) run python -m bench.invoker_bench

bench-numaflow: setup  ## the Numaflow source sidecar (read + ack through source.v1) next to the native SDK's consume, same run: JSON on stdout
	$(UV) run python -m bench.numaflow_bench

bench-analytics: setup  ## the analytics job: publish -> visible in its figures (p50, p99) at the default trigger, and its memory (needs Java 17+): JSON on stdout
	$(UV) run python -m bench.analytics_bench

bench-security: setup  ## TLS and TLS + tokens next to plaintext on publish and consume, same run: JSON on stdout
	$(UV) run python -m bench.security_bench

bench-startup: setup  ## the CLI's CPU per command, a completion's wall time and `weir cluster up`'s wall time (issue 52's targets): JSON on stdout
	$(UV) run python -m bench.startup_bench

bench-scrub: setup  ## the background scrub's cost: batched publishes with the scrub off and on at its default rate, alternating: JSON on stdout
	$(UV) run python -m bench.scrub_bench

bench-scheduled: setup  ## delayed delivery: lateness with 100k timers pending, memory per pending timer: JSON on stdout
	$(UV) run python -m bench.scheduled_bench

bench-node: setup  ## single-node micro-benchmarks of one partition node (publish, read, consume); prints JSON
	$(UV) run python -m bench.node_bench

bench-cluster: setup  ## replication cost on a local cluster: replicas 3 ack all next to replicas 1; prints JSON
	$(UV) run python -m bench.cluster_bench

bench-profile: setup  ## server CPU per message by process and thread (publish r1, r3 ack all at p1 and p16, consume, fixed rate r3); prints JSON
	$(UV) run python -m bench.cpu_profile

bench-commit: setup  ## one partition log's commit latency in process: WAL checkpoints in the commit vs on the background thread; prints JSON
	$(UV) run python -m bench.commit_latency --checkpoint-bytes 0
	$(UV) run python -m bench.commit_latency

bench-storage: setup  ## a 100-record commit's cost: row per message (before issue 25) vs record-batch layouts, as SQL prototypes; prints JSON
	$(UV) run python -m bench.storage_layout

bench-node-commit: setup  ## one node's commit tick for K partitions: per-partition SQLite (today) vs group commit, segment files, one commit log per node (issue 53); prints JSON
	$(UV) run python -m bench.node_commit

bench-scale: setup  ## what partitions cost as they grow: a 3-node cluster's idle CPU and node memory per partition-replica with 1,024 partitions x 3 replicas, the time to create a 256-partition stream, publish at p16-r3 next to an empty cluster's; prints JSON
	$(UV) run python -m bench.scale_bench

clean:
	rm -rf .pytest_cache .mypy_cache .ruff_cache site
