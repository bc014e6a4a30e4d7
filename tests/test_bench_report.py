"""The comparison benchmark's pure parts (bench.compare.harness): how runs become the report, and
how the fixed-rate phase issues its batches. The drivers are real ones, constructed, not started."""

from __future__ import annotations

import itertools
from typing import Any

from bench.compare.driver import Driver
from bench.compare.harness import Workload, make_driver, median_figures, report_workloads, send_on_schedule

WORKLOAD = Workload("p1-r1-leader", partitions=1, replicas=1, ack="leader")


def _run(publish: int, consume: int, latency: dict[str, Any]) -> dict[str, Any]:
    return {"publish": {"msgs_per_s": publish}, "consume": {"msgs_per_s": consume}, "latency": latency}


def _drivers() -> dict[tuple[str, int], Driver]:
    return {(system, 1): make_driver(system, 1) for system in ("redis-streams", "nats-jetstream")}


def test_median_figures_keeps_the_shape_and_takes_each_numbers_median() -> None:
    runs = [{"a": 1, "b": {"c": 1.0}, "name": "x"}, {"a": 5, "b": {"c": 4.0}, "name": "y"}, {"a": 3, "b": {"c": 2.5}}]
    assert median_figures(runs) == {"a": 3, "b": {"c": 2.5}, "name": "x"}


def test_report_takes_medians_latency_from_the_runs_that_held_and_leaves_out_a_system_without_runs() -> None:
    drivers = _drivers()
    redis = drivers[("redis-streams", 1)]
    results = {
        WORKLOAD.name: {
            "redis-streams": [
                _run(100, 50, {"end_to_end_us": {"p50": 10}}),
                _run(300, 70, {"error": "could not send at 1000 msgs/s"}),
                _run(200, 60, {"end_to_end_us": {"p50": 30}}),
            ],
            "nats-jetstream": [],
        }
    }
    report = report_workloads(
        [WORKLOAD], ["redis-streams", "nats-jetstream"], results, drivers, {redis.label: {"server": 12.5}}
    )
    entry = report[WORKLOAD.name]
    assert (entry["partitions"], entry["replicas"], entry["ack"]) == (1, 1, "leader")
    assert list(entry["systems"]) == ["redis-streams"]
    figures = entry["systems"]["redis-streams"]
    assert figures["publish"] == {"msgs_per_s": 200}
    assert figures["consume"] == {"msgs_per_s": 60}
    assert figures["latency"] == {"end_to_end_us": {"p50": 20.0}}  # the failed run's latency is not in it
    assert figures["runs_publish_msgs_per_s"] == [100, 300, 200]
    assert figures["runs_consume_msgs_per_s"] == [50, 70, 60]
    assert figures["peak_rss_mib"] == {"server": 12.5}
    assert figures["variant"] == redis.variant
    assert figures["semantics"] == redis.semantics["leader"]


def test_report_shows_the_first_runs_error_when_no_latency_phase_held() -> None:
    drivers = _drivers()
    runs = [_run(100, 50, {"error": "first"}), _run(120, 55, {"error": "second"})]
    results = {WORKLOAD.name: {"redis-streams": runs, "nats-jetstream": []}}
    label = drivers[("redis-streams", 1)].label
    report = report_workloads([WORKLOAD], ["redis-streams"], results, drivers, {label: {}})
    assert report[WORKLOAD.name]["systems"]["redis-streams"]["latency"] == {"error": "first"}


async def testsend_on_schedule_sends_every_batch_in_order_of_its_slot() -> None:
    slots: list[tuple[int, int]] = []

    async def send(batch_index: int, scheduled_ns: int) -> None:
        slots.append((batch_index, scheduled_ns))

    issued_ns = await send_on_schedule(5, 2_000_000, send, [])
    assert [index for index, _ in slots] == [0, 1, 2, 3, 4]
    gaps = {later - earlier for (_, earlier), (_, later) in itertools.pairwise(slots)}
    assert gaps == {2_000_000}  # the slots, not when each send ran
    assert issued_ns >= 5 * 2_000_000  # to the end of the last slot


async def testsend_on_schedule_stops_starting_batches_after_a_failure() -> None:
    failures: list[BaseException] = []
    started: list[int] = []

    async def send(batch_index: int, _scheduled_ns: int) -> None:
        started.append(batch_index)
        if batch_index == 1:
            failures.append(RuntimeError("refused"))

    await send_on_schedule(40, 20_000_000, send, failures)
    assert started[:2] == [0, 1]
    assert len(started) < 40  # it stopped: the whole schedule would take 0.8 s
    assert len(failures) == 1
