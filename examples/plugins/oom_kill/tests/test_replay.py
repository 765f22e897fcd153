"""The installed plugin in whole runs: `sitscheck run --from BUNDLE` over bundles of real OOM
reports (a bundle can be just a kernel log: `dmesg.txt`), its rule, params and config.

Runs only where the plugin is installed (its entry point is what makes sitscheck load it):
`pip install ./examples/plugins/oom_kill` beside sitscheck.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from oom_corpus import sample

pytestmark = pytest.mark.skipif(
    not any(e.name == "oom_kill" for e in entry_points(group="sitscheck.checks")),
    reason="the plugin is not installed (pip install ./examples/plugins/oom_kill)",
)


def _bundle(folder: Path, *prefixes: str) -> Path:
    folder.mkdir()
    lines = [line for prefix in prefixes for line in sample(prefix)]
    (folder / "dmesg.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _run(bundle: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    out = bundle.parent / f"{bundle.name}.json"
    argv = [sys.executable, "-m", "sitscheck", "run", "--from", str(bundle), "-o", f"json={out}"]
    done = subprocess.run(
        [*argv, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, report, done.stderr


def _oom(report: dict[str, Any]) -> dict[str, Any]:
    (check,) = [c for c in report["checks"] if c["name"] == "oom_kill"]
    found: dict[str, Any] = check
    return found


def _verdict(report: dict[str, Any]) -> str:
    (verdict,) = [v for v in report["verdicts"] if v["rule"] == "oom_kill.repeated_kills"]
    status: str = verdict["status"]
    return status


def test_seven_kills_are_critical(tmp_path: Path) -> None:
    code, report, _ = _run(_bundle(tmp_path / "b", "011"))
    check = _oom(report)
    assert [f["code"] for f in check["findings"]] == ["oom_kill.process_killed"] * 7
    assert {f["kind"] for f in check["findings"]} == {"event"}
    assert check["facts"]["count"] == 7
    assert _verdict(report) == "critical"
    assert code == 2


def test_one_kill_is_a_warning(tmp_path: Path) -> None:
    code, report, _ = _run(_bundle(tmp_path / "b", "007"))
    (finding,) = _oom(report)["findings"]
    assert finding["message"].startswith("tritonserver (pid 59249) killed by the OOM killer")
    assert _verdict(report) == "ok"
    assert code == 1


def test_ignored_processes_do_not_count(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("check_config:\n  oom_kill:\n    ignore_processes: [mount]\n")
    code, report, _ = _run(_bundle(tmp_path / "b", "011"), "--config", str(config))
    check = _oom(report)
    assert (check["facts"]["count"], check["facts"]["ignored"]) == (2, 5)
    assert len(check["findings"]) == 2
    assert _verdict(report) == "ok"
    assert code == 1


def test_a_site_file_overrides_the_shipped_param(tmp_path: Path) -> None:
    rules = tmp_path / "site.yaml"
    rules.write_text("params:\n  oom_kill_critical_count: 8\n")
    code, report, _ = _run(_bundle(tmp_path / "b", "011"), "--rules", str(rules))
    assert _verdict(report) == "ok"  # 7 kills, critical from 8
    assert code == 1


def test_a_wrong_config_section_is_one_line_and_exit_3(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("check_config:\n  oom_kill:\n    ignore_processes: [tritonserver-main]\n")
    code, _, stderr = _run(_bundle(tmp_path / "b", "007"), "--config", str(config))
    assert code == 3
    assert "check_config.oom_kill.ignore_processes" in stderr
    assert "Traceback" not in stderr
