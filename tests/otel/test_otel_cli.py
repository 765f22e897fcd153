"""Through the installed CLI: the spec's variables alone deliver both signals at their paths,
gzip and per-signal headers are honoured; a bad header is one line without its value; an
unwritable output still lets the export run (issues 17, 20)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from otel_samples import BUNDLE, TOKEN
from receivers import HttpReceiver

SITSCHECK = shutil.which("sitscheck", path=str(Path(sys.executable).parent)) or "sitscheck"


def run_cli(args: list[str], env: dict[str, str], state: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    clean.update(env)
    return subprocess.run(
        [SITSCHECK, "run", "--from", str(BUNDLE), "--state-dir", str(state), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean,
        check=False,
    )


def test_per_signal_endpoints_alone_deliver_both_signals_gzipped(tmp_path: Path) -> None:
    with HttpReceiver() as sink:
        sink.recorder.paths = {"/t/v1/traces": "traces", "/api/otlp/metrics": "metrics"}
        base = f"http://127.0.0.1:{sink.port}"
        done = run_cli(
            ["--output", "json=/dev/null"],
            {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{base}/t/v1/traces",
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": f"{base}/api/otlp/metrics",
                "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-signal=traces",
                "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "x-signal=metrics",
            },
            tmp_path,
        )
    assert done.returncode in (0, 1, 2), done.stderr
    assert "otlp" not in done.stderr, done.stderr  # no export error reported
    got = {
        (r.kind, r.path, r.headers.get("content-encoding"), r.headers.get("x-signal"))
        for r in sink.recorder.received
    }
    assert got == {
        ("traces", "/t/v1/traces", "gzip", "traces"),
        ("metrics", "/api/otlp/metrics", "gzip", "metrics"),
    }


def test_a_header_value_with_a_newline_is_one_line_without_the_token(tmp_path: Path) -> None:
    secret = TOKEN.replace(" ", "%20") + "%0A"
    done = run_cli(
        ["--output", "npd"],
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
            "OTEL_EXPORTER_OTLP_HEADERS": f"authorization={secret}",
        },
        tmp_path,
    )
    assert done.returncode == 3
    assert TOKEN.split()[1] not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert "authorization" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_an_unwritable_output_fails_alone_and_the_export_still_runs(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    with HttpReceiver() as sink:
        done = run_cli(
            ["--output", "json=/dev/full", "--output", f"prom={tmp_path / 'prom'}"],
            {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink.port}"},
            tmp_path / "state",
        )
    assert done.returncode == 3
    assert "Traceback" not in done.stderr
    assert "--output json=/dev/full" in done.stderr
    assert (tmp_path / "prom" / "sitscheck.prom").is_file()  # the other output was written
    assert sorted(r.kind for r in sink.recorder.received) == ["metrics", "traces"]


def test_the_daemon_logs_an_unwritable_output_in_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from sitscheck.daemon import loop
    from sitscheck.reporters.outputs import OutputError

    def run_once() -> None:
        raise OutputError("--output json=/dev/full: No space left on device")

    class Quiet:
        def status(self, text: str) -> None:
            self.text = text

    quiet = Quiet()
    with caplog.at_level(logging.ERROR):
        loop._one_run(run_once, quiet, None, None, False)  # type: ignore[arg-type]
    (record,) = caplog.records
    assert record.exc_info is None  # no traceback
    assert "/dev/full" in record.getMessage() and "/dev/full" in quiet.text
