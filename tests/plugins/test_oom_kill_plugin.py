"""The example plugin (examples/plugins/oom_kill) as an operator installs it: a separate
package, pip-installed into a fresh venv beside sitscheck, found only through its entry
points. Its check is listed, its code explained, its rule listed, its evidence collected, and
a recorded H200 bundle with a real OOM-kill report appended to its kernel log gives its
finding (and, with three kills, its rule's critical verdict).

The venv: `plugin_venv.make_venv` (nothing downloaded).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from corpus_paths import REPO_ROOT
from plugin_venv import Venv, make_venv

PLUGIN = REPO_ROOT / "examples" / "plugins" / "oom_kill"
CORPUS = PLUGIN / "tests" / "corpus"
H200_BUNDLE = REPO_ROOT / "tests" / "bundles" / "h200x2-idle-v1"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("venv") is None or importlib.util.find_spec("pip") is None,
    reason="the venv module or pip is missing",
)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    return make_venv(tmp_path_factory.mktemp("plugin"), ["oom_kill"])


def test_sitscheck_and_the_plugin_are_the_venvs_own(venv: Venv) -> None:
    assert venv.imports_its_own("sitscheck", "sitscheck_oom_kill")
    print(f"fresh venv with sitscheck and the plugin installed in {venv.setup_s:.1f} s")


def test_checks_lists_it(venv: Venv) -> None:
    done = venv.sitscheck("checks")
    assert done.returncode == 0, done.stderr
    (line,) = [row for row in done.stdout.splitlines() if row.startswith("oom_kill ")]
    assert line.split()[1] == "runtime"
    assert "OOM killer" in line


def test_explain_explains_its_code(venv: Venv) -> None:
    done = venv.sitscheck("explain", "oom_kill.process_killed")
    assert done.returncode == 0, done.stderr
    rows: dict[str, str] = {}
    for row in done.stdout.splitlines()[1:]:
        label = re.match(r"\s+(\w[\w ]*):\s+(.*)", row)
        if label is not None:
            rows[label.group(1)] = label.group(2)
    assert done.stdout.startswith("oom_kill.process_killed: ")
    assert rows["severity"] == "warning"
    assert rows["kind"] == "event"
    assert rows["category"] == "triage"
    assert rows["explained by"] == "oom_kill.repeated_kills"
    assert rows["layer"] == "runtime (raised by the oom_kill check)"


def test_rules_list_lists_its_rule(venv: Venv) -> None:
    done = venv.sitscheck("rules", "list")
    assert done.returncode == 0, done.stderr
    (line,) = [row for row in done.stdout.splitlines() if row.startswith("oom_kill.")]
    assert line.split()[:3] == ["oom_kill.repeated_kills", "node", "critical"]


def test_replayed_h200_bundle_with_one_oom_kill_gives_its_finding(
    venv: Venv, tmp_path: Path
) -> None:
    bundle = _h200_with_kills(tmp_path / "bundle", ["007"])
    code, report = _replay(venv, bundle, tmp_path / "report.json")
    oom = _check(report, "oom_kill")
    (finding,) = oom["findings"]
    assert finding["code"] == "oom_kill.process_killed"
    assert (finding["severity"], finding["kind"]) == ("warning", "event")
    assert finding["message"].startswith("tritonserver (pid 59249) killed by the OOM killer")
    assert "anon-rss 96 MiB" in finding["message"]
    assert "/kubepods/burstable/podcb040dc7-7546-49e2-ae77-320dc45ed2ce" in finding["message"]
    assert _verdict(report, "oom_kill.repeated_kills") == "ok"
    others = {c["name"]: c["status"] for c in report["checks"] if c["name"] != "oom_kill"}
    assert set(others.values()) <= {"ok", "skipped"}, others  # the recording itself is healthy
    assert (report["status"], code) == ("warning", 1)


def test_replayed_h200_bundle_with_three_oom_kills_is_critical(venv: Venv, tmp_path: Path) -> None:
    bundle = _h200_with_kills(tmp_path / "bundle", ["007", "006", "010"])
    code, report = _replay(venv, bundle, tmp_path / "report.json")
    oom = _check(report, "oom_kill")
    assert [f["message"].split(" ", 1)[0] for f in oom["findings"]] == [
        "tritonserver",
        "uwsgi",
        "polkitd",
    ]
    assert oom["facts"]["count"] == 3
    assert _verdict(report, "oom_kill.repeated_kills") == "critical"
    assert (report["status"], code) == ("critical", 2)


def test_collect_records_the_evidence_it_declares(venv: Venv, tmp_path: Path) -> None:
    """Only the plugin selected: what `collect` records is what it declared (the kernel log),
    nothing of the GPU checks' evidence; the recording replays through it."""
    config = tmp_path / "config.yaml"
    config.write_text("checks: [oom_kill]\n")
    bundle = tmp_path / "bundle"
    done = venv.sitscheck("collect", str(bundle), "--config", str(config))
    assert done.returncode == 0, done.stderr
    meta = json.loads((bundle / "meta.json").read_text())
    recorded = sorted(p.name for p in bundle.iterdir())
    assert set(recorded) | set(meta["missing"]) == {"dmesg.txt", "meta.json"}, (recorded, meta)
    if "dmesg.txt" not in recorded:
        pytest.skip(f"this machine's kernel log cannot be read: {meta['missing']['dmesg.txt']}")
    code, report = _replay(venv, bundle, tmp_path / "report.json", "--config", str(config))
    assert [c["name"] for c in report["checks"]] == ["oom_kill"]
    assert _check(report, "oom_kill")["status"] in ("ok", "warning"), report
    assert code in (0, 1, 2)  # this machine's own log may hold OOM kills


def test_the_plugins_own_tests_pass_against_the_installed_package(venv: Venv) -> None:
    done = venv.plugin_tests("oom_kill")
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "passed" in tail
    assert "skipped" not in tail, tail  # its replays run: the plugin is installed here


# --------------------------------------------------------------------------- helpers


_PLAIN = re.compile(r"\[\s*(?P<secs>\d+)\.(?P<usecs>\d{6})\] (?P<body>.*)")
_KMSG = re.compile(r"(?P<prio>\d+),(?P<seq>\d+),(?P<usec>\d+),[^;]*;")


def _h200_with_kills(target: Path, samples: list[str]) -> Path:
    """The recorded H200 bundle, its kernel log (raw /dev/kmsg records) followed by the real
    OOM reports of the plugin's corpus samples (plain dmesg), as /dev/kmsg would have them
    on that node: sequence numbers and the kernel clock continued from its last record."""
    shutil.copytree(H200_BUNDLE, target)
    log = target / "dmesg.txt"
    records = log.read_text(encoding="utf-8").splitlines()
    last = next(m for m in map(_KMSG.match, reversed(records)) if m is not None)
    seq, clock = int(last["seq"]), int(last["usec"])
    added: list[str] = []
    for name in samples:
        (path,) = CORPUS.glob(f"{name}-*.txt")
        lines = [_PLAIN.fullmatch(line) for line in path.read_text().splitlines()]
        assert all(lines), f"{path.name}: a plain dmesg sample"
        plain = [line for line in lines if line is not None]
        first = int(plain[0]["secs"]) * 1_000_000 + int(plain[0]["usecs"])
        clock += 1_000_000
        for line in plain:
            usec = clock + int(line["secs"]) * 1_000_000 + int(line["usecs"]) - first
            prio = 3 if "Kill" in line["body"] else 6  # pr_err for the kill lines
            seq += 1
            added.append(f"{prio},{seq},{usec},-;{line['body']}")
        clock = usec
    log.write_text("\n".join([*records, *added]) + "\n", encoding="utf-8")
    return target


def _replay(venv: Venv, bundle: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    done = venv.sitscheck("run", "--from", str(bundle), "--output", f"json={out}", *extra)
    assert out.exists(), done.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    return done.returncode, report


def _check(report: dict[str, Any], name: str) -> dict[str, Any]:
    (check,) = [c for c in report["checks"] if c["name"] == name]
    found: dict[str, Any] = check
    return found


def _verdict(report: dict[str, Any], rule: str) -> str:
    (verdict,) = [v for v in report["verdicts"] if v["rule"] == rule]
    return str(verdict["status"])
