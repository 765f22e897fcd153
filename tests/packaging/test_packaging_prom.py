"""The Prometheus textfile: parsed by prometheus_client, scraped through a real node_exporter."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from msgspec.structs import replace
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from sitscheck.cli import app
from sitscheck.models import Report
from sitscheck.reporters.prom import PROM_FILE, prom_name, render_prom, write_prom
from typer.testing import CliRunner

NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")


def samples(text: str) -> list[Sample]:
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def value(found: list[Sample], name: str, **labels: str) -> float:
    matches = [
        s.value
        for s in found
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(matches) == 1, (name, labels, matches)
    return float(matches[0])


def test_healthy_run_parses_with_a_status_per_check_and_rule(ok_report: Report) -> None:
    found = samples(render_prom(ok_report, False))
    assert value(found, "sitscheck_run_status", status="ok") == 1
    assert value(found, "sitscheck_run_status", status="critical") == 0
    assert value(found, "sitscheck_run_exit_code") == 0
    assert value(found, "sitscheck_last_run_timestamp_seconds") > 1.7e9
    for check in ok_report.checks:
        states = [
            s
            for s in found
            if s.name == "sitscheck_check_status" and s.labels["check"] == check.name
        ]
        assert sum(s.value for s in states) == 1
        assert (
            value(found, "sitscheck_check_status", check=check.name, status=check.status.value) == 1
        )
        assert value(found, "sitscheck_check_duration_seconds", check=check.name) >= 0
    for verdict in ok_report.verdicts:
        gpu = (
            None
            if verdict.device is None or verdict.device.index is None
            else str(verdict.device.index)
        )
        assert (
            value(
                found,
                "sitscheck_rule_status",
                rule=verdict.rule,
                gpu=gpu,
                status=verdict.status.value,
            )
            == 1
        )


def test_critical_run_has_its_findings_and_check_metrics(critical_report: Report) -> None:
    text = render_prom(critical_report, True)
    found = samples(text)
    assert value(found, "sitscheck_run_status", status="critical") == 1
    assert value(found, "sitscheck_run_exit_code") == 2
    assert value(found, "sitscheck_check_status", check="xid", status="critical") == 1
    assert value(found, "sitscheck_finding", check="xid", code="xid.79", gpu="0") == 1
    assert value(found, "sitscheck_check_findings", check="xid", severity="critical") == 1
    assert value(found, "sitscheck_gpu_xid_events", check="xid", xid="79") == 1
    assert value(found, "sitscheck_pcie_aer_events", check="pcie_aer") == 0
    assert " " not in "".join(line.split(" ")[0] for line in text.splitlines() if line[:1] != "#")


def test_daemon_marks_are_exported(daemon_report: Report) -> None:
    found = samples(render_prom(daemon_report, False))
    assert value(found, "sitscheck_daemon_marks", kind="finding", state="persisting") >= 1
    assert value(found, "sitscheck_daemon_marks", kind="finding", state="cleared") == 0


def test_cumulative_counters_are_counters() -> None:
    assert prom_name("hw.errors", "{error}", counter=True) == "sitscheck_hw_errors_total"
    assert prom_name("sitscheck.gpu.xid.events", "{event}") == "sitscheck_gpu_xid_events"
    assert prom_name("hw.power", "W") == "sitscheck_hw_power_watts"
    assert prom_name("sitscheck.pcie.replay.rate", "{replay}/min") == (
        "sitscheck_pcie_replay_rate_per_second"  # base unit: the value is divided by 60
    )
    assert prom_name("sitscheck.gpu.clock", "MHz") == "sitscheck_gpu_clock_hertz"
    assert prom_name("sitscheck.gpu.count", "{gpu}") == "sitscheck_gpu_number"
    assert prom_name("sitscheck.gpu.memory.remap_pending", "1") == (
        "sitscheck_gpu_memory_remap_pending"  # a 0/1 flag is no ratio
    )
    assert prom_name("hw.gpu.utilization", "1") == "sitscheck_hw_gpu_utilization_ratio"
    assert prom_name("x.seconds", "s") == "sitscheck_x_seconds"


def test_label_values_are_escaped(critical_report: Report) -> None:
    """Quotes and backslashes round-trip the exposition format; a newline, an escape sequence
    or a bidi control (text read from a node) is shown escaped, never written raw."""
    tricky = replace(critical_report, host='a"b\\c\nd\x1b[2J\u202e')
    text = render_prom(tricky, False)
    assert not any(ch in text for ch in "\x1b\u202e")
    found = samples(text)
    assert value(found, "sitscheck_info", host='a"b\\c\\nd\\x1b[2J\\u202e') == 1


def test_written_atomically_world_readable_and_named_prom(
    tmp_path: Path, ok_report: Report
) -> None:
    path = Path(write_prom(ok_report, str(tmp_path)))
    assert path == tmp_path / PROM_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == [PROM_FILE]
    samples(path.read_text())


def test_folders_made_for_the_textfile_let_node_exporter_in_installed_cli(
    tmp_path: Path, xid_bundle: Path
) -> None:
    """`-o prom=/new/dir` as root under a strict umask: node_exporter runs as `prometheus`, so
    the folders made are 0755 (they were 0750: the textfile was out of its reach) and the
    file 0644; folders made for other outputs stay private."""
    textfile = tmp_path / "new" / "textfile_collector"
    report = tmp_path / "private" / "report.json"
    args = ["run", "--from", str(xid_bundle), "-o", f"prom={textfile}", "-o", f"json={report}"]
    previous = os.umask(0o077)
    try:
        done = CliRunner().invoke(app, args)
    finally:
        os.umask(previous)
    assert done.exit_code == 2, done.stdout + done.stderr
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in (textfile, textfile.parent)}
    assert modes == {textfile: 0o755, textfile.parent: 0o755}
    assert stat.S_IMODE((textfile / PROM_FILE).stat().st_mode) == 0o644
    assert stat.S_IMODE(report.parent.stat().st_mode) == 0o750


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def node_exporter(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    if NODE_EXPORTER is None:
        pytest.skip(
            "prometheus-node-exporter is not installed (apt-get install prometheus-node-exporter)"
        )
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    port = free_port()
    process = subprocess.Popen(
        [
            NODE_EXPORTER,
            f"--web.listen-address=127.0.0.1:{port}",
            "--collector.disable-defaults",
            "--collector.textfile",
            f"--collector.textfile.directory={textfiles}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "GOMAXPROCS": "2"},
    )
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        deadline = time.monotonic() + 20
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                urllib.request.urlopen(url, timeout=2).read()
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "node_exporter did not start"
                time.sleep(0.1)
        yield url, textfiles
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def scrape(url: str) -> list[Sample]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return samples(response.read().decode())


def test_node_exporter_serves_the_textfile(
    node_exporter: tuple[str, Path], critical_report: Report, daemon_report: Report
) -> None:
    url, textfiles = node_exporter
    write_prom(critical_report, str(textfiles))
    found = scrape(url)
    assert value(found, "node_textfile_scrape_error") == 0
    assert value(found, "sitscheck_run_status", status="critical") == 1
    assert value(found, "sitscheck_check_status", check="xid", status="critical") == 1
    assert value(found, "sitscheck_finding", code="xid.79") == 1
    assert value(found, "sitscheck_gpu_xid_events", xid="79") == 1
    assert any(
        s.name == "node_textfile_mtime_seconds" and PROM_FILE in s.labels["file"] for s in found
    )

    write_prom(daemon_report, str(textfiles))  # rewritten in place: the new values are served
    found = scrape(url)
    assert value(found, "node_textfile_scrape_error") == 0
    assert value(found, "sitscheck_daemon_marks", kind="finding", state="persisting") >= 1
