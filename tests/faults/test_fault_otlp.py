"""The OTLP endpoint hangs, refuses connections, or answers errors, at the end of a whole
`sitscheck run --otlp` (the export-level behaviour is tests/otel's): the report is delivered
first, the exit code is the node's health, the failure is named without the token, nothing is
lost (the run's payloads wait in the spool) and the run ends within the export's budget."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fault_expect import CHECKS
from fault_node import BUNDLE, Invoked, invoke
from receivers import BlackHole, HttpReceiver, free_port

TOKEN = "s3cr3t-otlp-token-for-fault-tests"
TIMEOUT_MS = 500
PROXIES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def export_run(endpoint: str, state: Path) -> Invoked:
    env = {
        "OTEL_EXPORTER_OTLP_TIMEOUT": str(TIMEOUT_MS),
        "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{TOKEN}",
    }
    args = ("run", "--from", str(BUNDLE), "-o", "json", "--state-dir", str(state))
    return invoke(*args, "--otlp", endpoint, env=env)


def assert_delivered_and_named(done: Invoked, cause: str, budget_s: float) -> None:
    report = done.report()
    assert [c["name"] for c in report["checks"]] == list(CHECKS)
    assert done.code == 0 and report["status"] == "ok"  # the node's health, not the export's
    assert cause in done.stderr, done.stderr
    assert TOKEN not in done.stdout + done.stderr
    assert done.elapsed < budget_s, f"took {done.elapsed:.2f}s"


def spooled(state: Path) -> list[str]:
    return sorted(p.name.split("-")[1] for p in (state / "spool").glob("*.otlp"))


@pytest.fixture
def hole() -> Iterator[BlackHole]:
    with BlackHole() as sink:
        yield sink


def test_hung_endpoint_costs_one_request_timeout(hole: BlackHole, tmp_path: Path) -> None:
    done = export_run(f"http://127.0.0.1:{hole.port}", tmp_path)
    assert_delivered_and_named(done, "timed out", budget_s=3.0)
    assert spooled(tmp_path) == ["metrics", "traces"]  # kept for the next run


def test_refused_connection(tmp_path: Path) -> None:
    done = export_run(f"http://127.0.0.1:{free_port()}", tmp_path)
    assert_delivered_and_named(done, "Connection refused", budget_s=3.0)
    assert spooled(tmp_path) == ["metrics", "traces"]


ERRORS: dict[int, tuple[str, list[str]]] = {
    503: ("HTTP 503", ["metrics", "traces"]),  # down: both stay spooled
    500: ("HTTP 500", ["metrics", "traces"]),  # this kind failed: retried next run
    400: ("refused for good, dropped", []),  # a request the receiver will never take
}


@pytest.mark.parametrize("status", sorted(ERRORS))
def test_endpoint_answering_errors(status: int, tmp_path: Path) -> None:
    said, left = ERRORS[status]
    receiver: Any
    with HttpReceiver() as receiver:
        receiver.recorder.fail = {"traces": status, "metrics": status}
        done = export_run(receiver.endpoint, tmp_path)
    assert_delivered_and_named(done, said, budget_s=3.0)
    assert f"HTTP {status}" in done.stderr
    assert spooled(tmp_path) == left
