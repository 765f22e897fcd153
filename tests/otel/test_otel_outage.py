"""Delivery across outages: the spool keeps what was not acknowledged and sends it once.

Every scenario runs against a real receiver over a socket, with short timeouts.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from otel_samples import reports, settings_for
from otlp_decode import metrics_of, point, spans_of
from receivers import BlackHole, GrpcReceiver, HttpReceiver, free_port
from sitscheck.export.otel import ExportResult, export_report
from sitscheck.export.payload import started_ns
from sitscheck.models import Report

RECEIVERS = [GrpcReceiver, HttpReceiver]
IDS = ["grpc", "http"]
RUN_TIMEOUT_S = 1.5  # the budget each export gets here
SLACK_S = 0.75  # what an export may take past its budget (thread switches, a slow CI box)


def run(
    report: Report,
    endpoint: str,
    protocol: str,
    state: Path,
    timeout_s: float = RUN_TIMEOUT_S,
    **extra: Any,
) -> ExportResult:
    began = time.monotonic()
    result = export_report(report, settings_for(endpoint, protocol, **extra), state, timeout_s)
    assert time.monotonic() - began < timeout_s + SLACK_S, "the export overran its budget"
    return result


def endpoint_of(kind: Any, port: int) -> str:
    return f"http://127.0.0.1:{port}"


def trace_ids(receiver: Any) -> list[str]:
    """Trace ids of the received trace requests, in arrival order."""
    return [spans_of(request)[0].trace_id.hex() for request in receiver.recorder.of("traces")]


def metric_times(receiver: Any) -> list[int]:
    """Time stamp of each received metrics request (one run each), in arrival order."""
    times = []
    for request in receiver.recorder.of("metrics"):
        metric = metrics_of(request)["sitscheck.run.duration"]
        times.append(metric.gauge.data_points[0].time_unix_nano)
    return times


def end_ns(report: Report) -> int:
    return started_ns(report) + round(report.duration_s * 1e9)


@pytest.mark.parametrize("kind", RECEIVERS, ids=IDS)
def test_down_for_two_runs_up_for_the_third_receives_all_three_once(
    kind: Any, tmp_path: Path
) -> None:
    port = free_port()
    endpoint = endpoint_of(kind, port)
    first, second, third, fourth = reports(4)
    down1 = run(first, endpoint, kind.protocol, tmp_path)
    down2 = run(second, endpoint, kind.protocol, tmp_path)
    for result, pending in ((down1, 2), (down2, 4)):
        assert not result.current_delivered
        assert result.delivered == [] and result.pending == pending
        assert result.errors and "not sent" in result.errors[0]
    with kind(port=port) as receiver:
        up = run(third, endpoint, kind.protocol, tmp_path)
        assert up.current_delivered and up.pending == 0
        assert len(up.delivered) == 6 and up.delivered_earlier == 4
        assert up.errors == []
        # all three runs, once each, the earlier runs first
        assert trace_ids(receiver) == [down1.trace_id, down2.trace_id, up.trace_id]
        assert metric_times(receiver) == [end_ns(first), end_ns(second), end_ns(third)]
        # the next run sends only itself: nothing twice
        again = run(fourth, endpoint, kind.protocol, tmp_path)
        assert again.delivered_earlier == 0 and len(again.delivered) == 2
        assert trace_ids(receiver)[3:] == [again.trace_id]
        assert len(receiver.recorder.received) == 8
    assert list((tmp_path / "spool").glob("*.otlp")) == []


@pytest.mark.parametrize("kind", RECEIVERS, ids=IDS)
def test_a_hung_endpoint_costs_the_budget_and_nothing_is_lost(kind: Any, tmp_path: Path) -> None:
    hung_report, next_report = reports(2)
    with BlackHole() as hole:
        began = time.monotonic()
        hung = run(
            hung_report, f"http://127.0.0.1:{hole.port}", kind.protocol, tmp_path, timeout_s=0.6
        )
        took = time.monotonic() - began
    assert took < 0.6 + SLACK_S
    assert not hung.current_delivered and hung.pending == 2
    with kind(port=hole.port) as receiver:  # the same endpoint, answering now
        up = run(next_report, receiver.endpoint, kind.protocol, tmp_path)
    assert up.pending == 0 and up.delivered_earlier == 2
    assert trace_ids(receiver) == [hung.trace_id, up.trace_id]


@pytest.mark.parametrize("kind", RECEIVERS, ids=IDS)
def test_spool_bounds_drop_the_oldest_and_count_them(kind: Any, tmp_path: Path) -> None:
    port = free_port()
    endpoint = endpoint_of(kind, port)
    r1, r2, r3, r4 = reports(4)
    bounded = {"spool_max_files": 3}
    results = [run(r, endpoint, kind.protocol, tmp_path, **bounded) for r in (r1, r2, r3)]
    assert [r.dropped for r in results] == [0, 1, 2]
    assert [r.pending for r in results] == [2, 3, 3]
    assert results[-1].dropped_total == 3
    assert any("dropped 2" in message for message in results[-1].errors)
    state = json.loads((tmp_path / "spool" / "state.json").read_text())
    assert state["dropped_payloads"] == 3
    with kind(port=port) as receiver:
        up = run(r4, endpoint, kind.protocol, tmp_path, **bounded)
    assert up.pending == 0 and up.dropped == 0 and up.dropped_total == 3
    # what was left: run 2's trace, run 3's trace and metrics, then run 4's
    assert trace_ids(receiver) == [results[1].trace_id, results[2].trace_id, up.trace_id]
    assert metric_times(receiver) == [end_ns(r3), end_ns(r4)]
    newest = metrics_of(receiver.recorder.of("metrics")[-1])
    dropped = newest["sitscheck.otlp.dropped"]
    assert point(dropped, **{"sitscheck.drop.reason": "spool_limit"}) == 3
    # one counter, one start time (when the spool began counting), run after run
    starts = {
        p.start_time_unix_nano
        for request in receiver.recorder.of("metrics")
        for p in metrics_of(request)["sitscheck.otlp.dropped"].sum.data_points
    }
    assert len(starts) == 1 and starts.pop() > 0


def test_spool_bytes_bound(tmp_path: Path) -> None:
    port = free_port()
    first, second = reports(2)
    one = run(first, f"http://127.0.0.1:{port}", "http/protobuf", tmp_path)
    size = sum(p.stat().st_size for p in (tmp_path / "spool").glob("*.otlp"))
    two = run(second, f"http://127.0.0.1:{port}", "http/protobuf", tmp_path, spool_max_bytes=size)
    assert one.dropped == 0 and two.dropped == 2 and two.pending == 2
    left = sum(p.stat().st_size for p in (tmp_path / "spool").glob("*.otlp"))
    assert left <= size


@pytest.mark.parametrize("kind", RECEIVERS, ids=IDS)
def test_payloads_past_the_age_limit_are_dropped_not_sent(kind: Any, tmp_path: Path) -> None:
    (old,) = reports(1, minutes_ago=120)
    (new,) = reports(1, minutes_ago=1)
    port = free_port()
    endpoint = endpoint_of(kind, port)
    run(old, endpoint, kind.protocol, tmp_path)
    with kind(port=port) as receiver:
        up = run(new, endpoint, kind.protocol, tmp_path, spool_max_age_s=3600)
    assert up.dropped == 2 and up.dropped_total == 2 and up.pending == 0
    assert trace_ids(receiver) == [up.trace_id]


@pytest.mark.parametrize(
    ("kind", "failure"),
    [(GrpcReceiver, grpc.StatusCode.INVALID_ARGUMENT), (HttpReceiver, 400)],
    ids=IDS,
)
def test_a_payload_refused_for_good_is_dropped_counted_and_not_retried(
    kind: Any, failure: Any, tmp_path: Path
) -> None:
    first, second = reports(2)
    with kind() as receiver:
        receiver.recorder.fail["metrics"] = failure
        refused = run(first, receiver.endpoint, kind.protocol, tmp_path)
        assert refused.rejected == 1 and refused.pending == 0
        assert refused.rejected_total == 1
        assert any("refused for good" in message for message in refused.errors)
        assert trace_ids(receiver) == [refused.trace_id]  # traces went through
        del receiver.recorder.fail["metrics"]
        fine = run(second, receiver.endpoint, kind.protocol, tmp_path)
    assert fine.delivered_earlier == 0 and fine.current_delivered
    assert metric_times(receiver) == [end_ns(second)]
    newest = metrics_of(receiver.recorder.of("metrics")[-1])
    assert point(newest["sitscheck.otlp.dropped"], **{"sitscheck.drop.reason": "rejected"}) == 1


@pytest.mark.parametrize(
    ("kind", "failure"),
    [(GrpcReceiver, grpc.StatusCode.UNIMPLEMENTED), (HttpReceiver, 404)],
    ids=IDS,
)
def test_a_kind_the_receiver_refuses_waits_without_blocking_the_other(
    kind: Any, failure: Any, tmp_path: Path
) -> None:
    first, second = reports(2)
    with kind() as receiver:
        receiver.recorder.fail["metrics"] = failure
        partly = run(first, receiver.endpoint, kind.protocol, tmp_path)
        assert not partly.current_delivered and partly.pending == 1
        assert trace_ids(receiver) == [partly.trace_id]
        del receiver.recorder.fail["metrics"]
        fixed = run(second, receiver.endpoint, kind.protocol, tmp_path)
    assert fixed.pending == 0 and fixed.delivered_earlier == 1
    assert metric_times(receiver) == [end_ns(first), end_ns(second)]
    assert trace_ids(receiver) == [partly.trace_id, fixed.trace_id]


def test_a_spooled_payload_is_resent_byte_for_byte(tmp_path: Path) -> None:
    (report,) = reports(1)
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    run(report, endpoint, "http/protobuf", tmp_path)
    spooled = {p.name.split("-")[1]: p.read_bytes() for p in (tmp_path / "spool").glob("*.otlp")}
    assert set(spooled) == {"traces", "metrics"}
    with HttpReceiver(port=port) as receiver:
        (later,) = reports(1, minutes_ago=1)
        run(later, endpoint, "http/protobuf", tmp_path)
    raw = {r.kind: [] for r in receiver.recorder.received}  # type: dict[str, list[bytes]]
    for item in receiver.recorder.received:
        raw[item.kind].append(item.raw)
    assert raw["traces"][0] == spooled["traces"]
    assert raw["metrics"][0] == spooled["metrics"]


def test_another_run_holding_the_spool_leaves_this_runs_payloads_for_later(
    tmp_path: Path,
) -> None:
    first, second = reports(2)
    (tmp_path / "spool").mkdir()
    holder = os.open(tmp_path / "spool" / ".lock", os.O_RDWR | os.O_CREAT, 0o640)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with HttpReceiver() as receiver:
            busy = run(first, receiver.endpoint, "http/protobuf", tmp_path, timeout_s=0.4)
        assert receiver.recorder.received == []
        assert busy.pending == 2 and any("holds the spool" in m for m in busy.errors)
    finally:
        os.close(holder)
    with HttpReceiver(port=receiver.port) as receiver:
        free = run(second, receiver.endpoint, "http/protobuf", tmp_path)
    assert free.delivered_earlier == 2
    assert trace_ids(receiver) == [busy.trace_id, free.trace_id]


@pytest.mark.parametrize("up", [True, False], ids=["up", "down"])
def test_an_unusable_spool_still_sends_from_memory(up: bool, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.write_text("a file where the state folder should be")
    (report,) = reports(1)
    starter: Callable[[], Any] = HttpReceiver
    with starter() as receiver:
        endpoint = receiver.endpoint if up else f"http://127.0.0.1:{free_port()}"
        result = run(report, endpoint, "http/protobuf", state)
    assert any("spool" in message for message in result.errors)
    if up:
        assert result.current_delivered and result.lost == 0
        assert trace_ids(receiver) == [result.trace_id]
    else:
        assert not result.current_delivered and result.lost == 2


def test_no_time_left_sends_nothing_and_spools_everything(tmp_path: Path) -> None:
    (report,) = reports(1)
    with HttpReceiver() as receiver:
        result = run(report, receiver.endpoint, "http/protobuf", tmp_path, timeout_s=0.0)
    assert receiver.recorder.received == []
    assert result.pending == 2 and any("out of time" in m for m in result.errors)


def test_slow_name_resolution_cannot_stall_an_http_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    real = socket.getaddrinfo

    def slow(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "slow-dns.test":
            time.sleep(3.0)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    (report,) = reports(1)
    result = run(report, "http://slow-dns.test:4318", "http/protobuf", tmp_path, timeout_s=0.5)
    assert not result.current_delivered and result.pending == 2
    assert any("no answer within" in message for message in result.errors)
