"""No secret reaches a report, a span, a metric, a log line, the state or the spool: secrets
are planted (OTLP headers from the environment and the site config, a password in the
endpoint, tokens in the environment) and every output of a run is searched for them."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from fakes.commands import write_command
from receivers import HttpReceiver, free_port
from sitscheck.cli import app
from sitscheck.sources.command import CommandRunner
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tests" / "bundles" / "h200x2-idle-v0"
PROXIES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
SECRETS = {
    "bearer": "bearer-7f3c9e1d-planted",
    "api_key": "apikey-2b8d4a6f-planted",
    "config_header": "cfgheader-1d6e8a4c-planted",
    "password": "password-5e1a0c3b-planted",
    "env_token": "envtoken-9c4f7b2e-planted",
    "aws": "awssecret-3a7e5d9b-planted",
}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def planted_env(headers_from: str = "environment") -> dict[str, str]:
    """Tokens in the environment; the OTLP headers there too, or left to the site config
    (the environment's OTEL_EXPORTER_OTLP_HEADERS replaces the file's headers)."""
    env = {
        "OTEL_EXPORTER_OTLP_TIMEOUT": "500",
        "PLANTED_API_TOKEN": SECRETS["env_token"],
        "AWS_SECRET_ACCESS_KEY": SECRETS["aws"],
    }
    if headers_from == "environment":
        env["OTEL_EXPORTER_OTLP_HEADERS"] = (
            f"authorization=Bearer%20{SECRETS['bearer']},x-api-key={SECRETS['api_key']}"
        )
    return env


def site_config(folder: Path) -> Path:
    path = folder / "config.yaml"
    path.write_text(f"otlp:\n  headers:\n    x-site-token: {SECRETS['config_header']}\n")
    return path


def leaks(text: str | bytes, where: str) -> list[str]:
    data = text.encode("utf-8", "replace") if isinstance(text, str) else text
    return [f"{name} in {where}" for name, value in SECRETS.items() if value.encode() in data]


def run_and_search(
    endpoint_port: int,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    headers_from: str = "environment",
) -> tuple[list[str], Any]:
    state, reports = tmp_path / "state", tmp_path / "reports"
    reports.mkdir()
    endpoint = f"http://user:{SECRETS['password']}@127.0.0.1:{endpoint_port}"
    args = ["run", "--from", str(BUNDLE), "--daemon", "--state-dir", str(state), "-v"]
    args += ["--config", str(site_config(tmp_path)), "--otlp", endpoint]
    args += ["-o", f"json={reports / 'r.json'}", "-o", f"junit={reports / 'r.xml'}"]
    args += ["-o", f"prom={reports}", "-o", "table", "-o", "npd"]
    with caplog.at_level(logging.DEBUG):
        done = CliRunner().invoke(app, args, env=planted_env(headers_from))
    found = leaks(done.stdout, "stdout") + leaks(done.stderr, "stderr")
    found += leaks("\n".join(r.getMessage() for r in caplog.records), "logs")
    for path in sorted(p for p in tmp_path.rglob("*") if p.is_file() and p.name != "config.yaml"):
        found += leaks(path.read_bytes(), str(path.relative_to(tmp_path)))
    return found, done


@pytest.mark.parametrize("headers_from", ["environment", "site-config"])
def test_delivered_run_leaks_no_secret(
    headers_from: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    receiver: Any
    with HttpReceiver() as receiver:
        found, done = run_and_search(receiver.port, tmp_path, caplog, headers_from)
    assert done.exit_code == 0, done.stdout + done.stderr
    received = receiver.recorder.received
    assert {r.kind for r in received} == {"traces", "metrics"}
    for item in received:
        found += leaks(item.raw, f"the {item.kind} payload")
    assert found == []
    # control: the headers did go where they belong, and only there
    headers = received[0].headers
    if headers_from == "environment":
        assert headers["authorization"] == f"Bearer {SECRETS['bearer']}"
        assert headers["x-api-key"] == SECRETS["api_key"]
    else:
        assert headers["x-site-token"] == SECRETS["config_header"]


def test_failed_export_leaks_no_secret(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    found, done = run_and_search(free_port(), tmp_path, caplog)
    assert "not sent" in done.stderr  # the failure is told...
    assert found == []  # ...without a secret, and the spooled payloads hold none either
    assert list((tmp_path / "state" / "spool").glob("*.otlp"))


def test_rejecting_receiver_leaks_no_secret(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    receiver: Any
    with HttpReceiver() as receiver:
        receiver.recorder.fail = {"traces": 401, "metrics": 403}
        found, done = run_and_search(receiver.port, tmp_path, caplog)
    assert "HTTP 401" in done.stderr and "HTTP 403" in done.stderr
    assert found == []


def test_commands_get_no_secret_in_their_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in planted_env().items():
        monkeypatch.setenv(name, value)
    write_command(tmp_path / "bin", "printenv-like", "env")
    shown = CommandRunner(path=str(tmp_path / "bin")).run(["printenv-like"], 5).stdout
    assert "LC_ALL=C" in shown  # control: this is the command's environment
    assert leaks(shown, "a command's environment") == []
