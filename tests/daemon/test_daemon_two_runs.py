"""Timer runs over a replayed node whose kernel log grows: each run sees only what is new.

The runs go through the real checks (xid, pcie_aer) and runner on a copy of a recorded
2×H200 bundle, with the daemon session wrapped around the sources as `run --daemon` does.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sitscheck.checks.pcie_aer.check import PcieAerCheck
from sitscheck.checks.xid.check import XidCheck
from sitscheck.config import RunConfig
from sitscheck.contract.runner import run_checks
from sitscheck.daemon import DaemonSession
from sitscheck.models import Report, Status
from sitscheck.report.assemble import build_report
from sitscheck.sources.replay import ReplaySources

RECORDED = Path(__file__).resolve().parents[1] / "bundles" / "h200x2-idle-v0"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
LAST_SEQ = 370  # the recorded log's last /dev/kmsg record


def xid_line(seq: int, bus: str, code: int, pid: int) -> str:
    return (
        f"4,{seq},{9_000_000 + seq * 1000},-;NVRM: Xid (PCI:{bus}): {code}, pid={pid}, "
        f"name=python3, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS faulted"
    )


def noise(seq: int, text: str) -> str:
    return f"6,{seq},{9_000_000 + seq * 1000},-;{text}"


def make_bundle(tmp_path: Path, boot_id: str = "boot-1") -> Path:
    bundle = tmp_path / "node"
    shutil.copytree(RECORDED, bundle)
    meta = json.loads((bundle / "meta.json").read_text())
    meta["boot_id"] = boot_id
    (bundle / "meta.json").write_text(json.dumps(meta))
    return bundle


def append(bundle: Path, lines: list[str]) -> None:
    with (bundle / "dmesg.txt").open("a", encoding="utf-8") as out:
        out.writelines(line + "\n" for line in lines)


def set_boot(bundle: Path, boot_id: str) -> None:
    meta = json.loads((bundle / "meta.json").read_text())
    meta["boot_id"] = boot_id
    (bundle / "meta.json").write_text(json.dumps(meta))


def daemon_run(bundle: Path, state: Path, now: datetime) -> Report:
    config = RunConfig()
    with DaemonSession(state, now=now) as session:
        sources = session.follow(ReplaySources(bundle, label=str(bundle)))
        results = run_checks([XidCheck(), PcieAerCheck()], sources, config)
        report = build_report(results, [], now, 0.1, "replay", str(bundle), None, "node", None)
        return session.finish(report, now)


def xid_events(report: Report) -> list[dict[str, object]]:
    result = report.check("xid")
    assert result is not None and result.error is None, result
    events: list[dict[str, object]] = result.facts["events"]
    return events


def first_three() -> list[str]:
    return [
        xid_line(LAST_SEQ + 1, "0000:00:06", 31, 101),
        xid_line(LAST_SEQ + 2, "0000:00:06", 31, 102),
        xid_line(LAST_SEQ + 3, "0000:00:07", 13, 103),
    ]


def test_second_run_reports_only_the_events_the_log_grew_by(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path)
    state = tmp_path / "state"
    append(bundle, first_three())

    first = daemon_run(bundle, state, T0)
    assert [e["pid"] for e in xid_events(first)] == [101, 102, 103]
    xid = first.check("xid")
    assert xid is not None
    assert {(f.code, f.state) for f in xid.findings} == {("xid.31", "new"), ("xid.13", "new")}
    assert first.daemon is not None and first.daemon.kernel_log is not None
    assert "no cursor yet" in first.daemon.kernel_log

    grown = [
        noise(LAST_SEQ + 4, "nvidia-modeset: Allocated GPU:0"),
        " SUBSYSTEM=pci",
        xid_line(LAST_SEQ + 5, "0000:00:06", 31, 201),
        noise(LAST_SEQ + 6, "eth0: link up"),
        xid_line(LAST_SEQ + 7, "0000:00:07", 43, 202),
    ]
    append(bundle, grown)
    second = daemon_run(bundle, state, T0 + timedelta(minutes=5))
    assert [e["pid"] for e in xid_events(second)] == [201, 202]
    xid = second.check("xid")
    assert xid is not None
    assert {(f.code, f.state) for f in xid.findings} == {("xid.31", "new"), ("xid.43", "new")}
    assert "×1" in next(f.message for f in xid.findings if f.code == "xid.31")
    assert second.cleared == []  # xid.13 had no new events: events do not "clear"
    assert second.daemon is not None and second.daemon.kernel_log is not None
    assert "resumed after record 373" in second.daemon.kernel_log
    assert f"{len(grown)} new" in second.daemon.kernel_log

    third = daemon_run(bundle, state, T0 + timedelta(minutes=10))
    assert xid_events(third) == []
    xid = third.check("xid")
    assert xid is not None and xid.findings == [] and xid.status == Status.OK


def test_new_boot_id_resets_the_cursor(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, boot_id="boot-1")
    state = tmp_path / "state"
    append(bundle, first_three())
    assert len(xid_events(daemon_run(bundle, state, T0))) == 3
    assert xid_events(daemon_run(bundle, state, T0 + timedelta(minutes=5))) == []

    set_boot(bundle, "boot-2")  # same lines, another boot: every line is this boot's
    after = daemon_run(bundle, state, T0 + timedelta(minutes=10))
    assert len(xid_events(after)) == 3
    assert after.daemon is not None and after.daemon.kernel_log is not None
    assert "new boot" in after.daemon.kernel_log


def test_rebooted_log_is_read_from_its_start(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, boot_id="boot-1")
    state = tmp_path / "state"
    append(bundle, first_three())
    daemon_run(bundle, state, T0)

    recorded = (RECORDED / "dmesg.txt").read_text(encoding="utf-8").splitlines()
    fresh = [*recorded[:100], xid_line(400, "0000:00:07", 79, 301)]
    (bundle / "dmesg.txt").write_text("\n".join(fresh) + "\n", encoding="utf-8")
    set_boot(bundle, "boot-2")
    after = daemon_run(bundle, state, T0 + timedelta(minutes=5))
    assert [e["pid"] for e in xid_events(after)] == [301]


def test_rebooted_log_without_a_boot_id_is_caught_by_the_cursor_hash(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path)
    meta = json.loads((bundle / "meta.json").read_text())
    del meta["boot_id"]
    (bundle / "meta.json").write_text(json.dumps(meta))
    state = tmp_path / "state"
    append(bundle, first_three())
    daemon_run(bundle, state, T0)

    # another boot's log, as long as the old one: same sequence numbers, other records
    recorded = (RECORDED / "dmesg.txt").read_text(encoding="utf-8").splitlines()
    other = [*recorded, *(xid_line(LAST_SEQ + i, "0000:00:07", 79, 400 + i) for i in (1, 2, 3))]
    other = [line.replace(",9", ",8", 1) if line.startswith("4,37") else line for line in other]
    (bundle / "dmesg.txt").write_text("\n".join(other) + "\n", encoding="utf-8")
    after = daemon_run(bundle, state, T0 + timedelta(minutes=5))
    assert [e["pid"] for e in xid_events(after)] == [401, 402, 403]
    assert after.daemon is not None and after.daemon.kernel_log is not None
    assert "differs" in after.daemon.kernel_log


def test_state_survives_between_runs_as_json(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path)
    state = tmp_path / "state"
    append(bundle, first_three())
    daemon_run(bundle, state, T0)
    saved = json.loads((state / "state.json").read_text())
    assert saved["format"] == "sitscheck-state" and saved["version"] == 1
    assert saved["boot_id"] == "boot-1"
    assert saved["kernel_cursor"]["seq"] == LAST_SEQ + 3
    assert saved["kernel_cursor"]["boot_id"] == "boot-1"
    assert saved["last_run"]["status"] in ("critical", "warning")
