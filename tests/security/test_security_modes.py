"""What sitscheck writes is private whatever the umask: reports, state, lock and spool files
0640 (or stricter) and their folders 0750; node_exporter's textfile alone is 0644 (its reader is
another user), never writable by others."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from sitscheck.cli import app
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tests" / "bundles" / "h200x2-idle-v0"
PROXIES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


@pytest.fixture(params=[0o000, 0o002, 0o022], ids=["umask-000", "umask-002", "umask-022"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    value: int = request.param
    previous = os.umask(value)
    yield value
    os.umask(previous)


def refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_every_file_written_is_private(
    umask: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
    state, reports = tmp_path / "state", tmp_path / "reports"
    reports.mkdir(mode=0o750)
    args = ["run", "--from", str(BUNDLE), "--daemon", "--state-dir", str(state)]
    args += ["-o", f"json={reports / 'report.json'}", "-o", f"junit={reports / 'report.xml'}"]
    args += ["-o", f"text={reports / 'report.txt'}", "-o", f"prom={reports}"]
    args += ["--otlp", f"http://127.0.0.1:{refused_port()}"]  # refused: the payloads are spooled
    done = CliRunner().invoke(app, args, env={"OTEL_EXPORTER_OTLP_TIMEOUT": "300"})
    assert done.exit_code == 0, done.stdout + done.stderr

    written = {p.relative_to(tmp_path): stat.S_IMODE(p.stat().st_mode) for p in tmp_path.rglob("*")}
    assert {Path("state/spool"), Path("state/state.json"), Path("reports/sitscheck.prom")} <= set(
        written
    )
    assert any(p.suffix == ".otlp" for p in written), written
    for path, mode in written.items():
        if (tmp_path / path).is_dir():
            assert mode & 0o027 == 0, f"{path} {oct(mode)}"  # no group write, nothing for others
        elif path.name == "sitscheck.prom":
            assert mode == 0o644, f"{path} {oct(mode)}"
        else:
            assert mode & 0o137 == 0, f"{path} {oct(mode)}"  # at most rw-r-----


def test_folders_made_for_a_report_are_not_world_writable(tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper" / "report.json"
    previous = os.umask(0)
    try:
        done = CliRunner().invoke(app, ["run", "--from", str(BUNDLE), "-o", f"json={target}"])
    finally:
        os.umask(previous)
    assert done.exit_code == 0, done.stdout + done.stderr
    for folder in (target.parent, target.parent.parent):
        mode = stat.S_IMODE(folder.stat().st_mode)
        assert mode & 0o002 == 0, f"{folder} {oct(mode)}"
