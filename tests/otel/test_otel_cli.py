"""Through the installed CLI: the spec's variables alone deliver both signals at their paths,
gzip and per-signal headers are honoured; a bad header is one line without its value; an
unwritable output still lets the export run (issues 17, 20)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from otel_samples import BUNDLE, TOKEN
from otlp_decode import attrs
from receivers import HttpReceiver

SITSCHECK = shutil.which("sitscheck", path=str(Path(sys.executable).parent)) or "sitscheck"


def run_cli(
    args: list[str], env: dict[str, str], state: Path, bundle: Path = BUNDLE
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    clean.update(env)
    return subprocess.run(
        [SITSCHECK, "run", "--from", str(bundle), "--state-dir", str(state), *args],
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
            "OTEL_EXPORTER_OTLP_TIMEOUT": "300",
        },
        tmp_path,
    )
    assert done.returncode == 0, done.stderr  # the idle bundle's health: the header is left out
    assert TOKEN.split()[1] not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    (warning,) = [line for line in done.stderr.splitlines() if "warning" in line]
    assert "authorization" in warning and "OTEL_EXPORTER_OTLP_HEADERS" in warning


CRITICAL_BUNDLE = BUNDLE.parent / "faults" / "gpu-lost-gpu1"


def outputs(where: Path) -> list[str]:
    where.mkdir()
    return ["-o", f"json={where / 'report.json'}", "-o", f"prom={where}", "-o", "npd"]


def test_telemetry_typos_warn_and_change_no_output_and_no_exit_code(tmp_path: Path) -> None:
    """Issue 29 item 7: a bad OTEL_* variable or `otlp:` key is one warning line each and is
    ignored; the report, textfile, NPD line and exit code are the run's without them, and the
    export still delivers with the settings that were good."""
    site = tmp_path / "config.yaml"
    site.write_text(
        "otlp:\n  compression: zstd\n  endpiont: http://typo:4318\n  timeout_s: -1\n"
        "  resource_attributes: {site: s1}\n"
    )
    args = ["--config", str(site)]
    clean = run_cli([*outputs(tmp_path / "clean")], {}, tmp_path / "s1", CRITICAL_BUNDLE)
    bad = {
        "OTEL_RESOURCE_ATTRIBUTES": "a=b,broken",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "127.0.0.1:4318/v1/traces",  # no scheme
        "OTEL_EXPORTER_OTLP_TIMEOUT": "soon",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        "OTEL_SDK_DISABLED": "yes",
    }
    with HttpReceiver() as sink:
        env = {**bad, "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint}
        typo = run_cli([*args, *outputs(tmp_path / "typo")], env, tmp_path / "s2", CRITICAL_BUNDLE)
    assert clean.returncode == typo.returncode, clean.stderr + typo.stderr
    assert typo.stdout == clean.stdout and typo.stdout.startswith("critical")  # the NPD line
    for name in ("report.json", "sitscheck.prom"):
        assert (tmp_path / "typo" / name).is_file()
    status = [
        json.loads((tmp_path / d / "report.json").read_text())["status"] for d in ("clean", "typo")
    ]
    assert status == ["critical", "critical"]
    warnings = [line for line in typo.stderr.splitlines() if line.startswith("sitscheck: warning:")]
    assert typo.stderr.splitlines() == warnings  # nothing else: the export went through
    words = [line.split()[2:4] for line in warnings]
    named = sorted((pair[1] if pair[0] == "config" else pair[0]).rstrip(":") for pair in words)
    assert named == sorted([*bad, "otlp.compression", "otlp.endpiont", "otlp.timeout_s"])
    assert sorted(r.kind for r in sink.recorder.received) == ["metrics", "traces"]
    for received in sink.recorder.received:
        assert "content-encoding" not in received.headers  # zstd ignored: none
    trace = sink.recorder.of("traces")[0]
    resource = attrs(trace.resource_spans[0].resource.attributes)
    assert resource["a"] == "b" and resource["site"] == "s1" and "broken" not in str(resource)


@pytest.mark.parametrize("signal", ["traces", "metrics"])
def test_an_exporter_variable_of_none_sends_no_such_signal(signal: str, tmp_path: Path) -> None:
    with HttpReceiver() as sink:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint,
            f"OTEL_{signal.upper()}_EXPORTER": "none",
        }
        done = run_cli(["--output", "json=/dev/null"], env, tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert [r.kind for r in sink.recorder.received] == [
        k for k in ("traces", "metrics") if k != signal
    ]


def test_a_site_file_may_set_compression(tmp_path: Path) -> None:
    site = tmp_path / "config.yaml"
    with HttpReceiver() as sink:
        site.write_text(f"otlp:\n  endpoint: {sink.endpoint}\n  compression: gzip\n")
        done = run_cli(["--config", str(site), "--output", "json=/dev/null"], {}, tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert {r.headers.get("content-encoding") for r in sink.recorder.received} == {"gzip"}
    assert len(sink.recorder.received) == 2


def test_a_malformed_otlp_option_is_a_user_error(tmp_path: Path) -> None:
    """--otlp is typed on this command line: a mistake there stops the run at once (exit 3,
    one line), as any other bad option does."""
    done = run_cli(["--otlp", "collector:4318", "--output", "npd"], {}, tmp_path)
    assert done.returncode == 3 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert "--otlp" in line and "http://" in line


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
    lines: list[str] = []
    options = loop._RunOptions(1, None, None, handle_signals=False)
    with caplog.at_level(logging.ERROR):
        loop._one_run(run_once, quiet, options, lines.append)  # type: ignore[arg-type]
    assert not [r for r in caplog.records if r.exc_info]  # no traceback
    (line,) = lines
    assert "/dev/full" in line and "/dev/full" in quiet.text
