"""The OOM-killer parser over real kernel logs (tests/corpus, sources in SOURCES.md): one
event per kill in every kernel era and every log-tool prefix form."""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

import pytest

from oom_corpus import SAMPLES, expected, sample, scan
from sitscheck_oom_kill.parse import parse_summary

FIELDS = (
    "pid process time anon_rss_kb total_vm_kb file_rss_kb shmem_rss_kb uid pgtables_kb "
    "oom_score_adj scope constraint oom_memcg task_memcg chosen_pid score reaped"
).split()


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name[:3])
def test_corpus_sample_gives_its_kills(path: Path) -> None:
    kills = scan(path.read_text(encoding="utf-8").splitlines())
    found = [{name: getattr(kill, name) for name in FIELDS} for kill in kills]
    assert found == expected(path)


def test_every_kill_keeps_its_own_lines() -> None:
    (kill,) = scan(sample("008"))
    assert [line.split(" ", 1)[0] for line in kill.lines] == [
        "pool",  # "pool invoked oom-killer: ..." begins the report
        "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
        "task_memcg=/user.slice/user-21417.slice/user@21417.service,task=perl,pid=1440763,"
        "uid=21417",
        "Out",
        "oom_reaper:",
    ]
    assert kill.line.startswith("Out of memory: Killed process 1440763 (perl) ")


# --------------------------------------------------------------------- one kill, one event


def test_reaper_joins_the_kill_of_its_pid_when_kills_interleave() -> None:
    lines = sample("005")  # kill A, reap A, kill B, reap B, ...
    kills_first = [lines[0], lines[2], lines[1], lines[3]]  # kill A, kill B, reap A, reap B
    kills = scan(kills_first)
    assert [(k.pid, k.reaped, k.lines[-1][:41]) for k in kills] == [
        (15784, True, "oom_reaper: reaped process 15784 (python3"),
        (15925, True, "oom_reaper: reaped process 15925 ((resolv"),
    ]


def test_each_reaper_line_goes_to_the_latest_kill_of_its_pid_once() -> None:
    """A pid killed again (reused by a later process): its second kill is not reaped by the
    first kill's reaper line, and a repeated reaper line reaps nothing more."""
    kill, reap = sample("006")[:2]
    kills = scan([kill, reap, reap, kill])
    assert [(k.pid, k.reaped, len(k.lines)) for k in kills] == [(63214, True, 2), (63214, False, 1)]


def test_a_reaper_line_alone_is_not_a_kill() -> None:
    """Its kill line was read by an earlier run (a daemon reading from a cursor) or is not in
    the log: counting it would count that kill twice, or one that is not there."""
    reaper_lines = [line for line in sample("005") if "oom_reaper" in line]
    assert len(reaper_lines) == 4
    assert scan(reaper_lines) == []


def test_a_summary_alone_is_not_a_kill() -> None:
    """The kernel prints the summary before it kills, and skips the kill of a victim that is
    already exiting ("OOM victim ... is already exiting. Skip killing the task")."""
    summary_lines = [line for line in sample("010") if "oom-kill:" in line]
    assert len(summary_lines) == 1
    assert scan(summary_lines) == []
    assert scan(sample("012")) == []


def test_a_summary_joins_only_the_kill_of_its_pid() -> None:
    lines = sample("010")
    summary = next(line for line in lines if "oom-kill:" in line)
    kill_of_another_pid = next(line for line in sample("011") if "Killed process" in line)
    (kill,) = scan([summary, kill_of_another_pid])
    assert (kill.pid, kill.constraint, kill.task_memcg) == (140339, None, None)
    assert kill.scope == "memcg"  # from its own wording, not from polkitd's summary


def test_the_chosen_process_of_an_earlier_report_is_not_carried_to_a_later_kill() -> None:
    """2.6-5.0: "Kill process P ... or sacrifice child" belongs to the kill line after it; a
    new report ("invoked oom-killer") begins afresh."""
    lines = sample("001")
    chosen = next(line for line in lines if "Kill process 40738 " in line)
    invoked = lines[lines.index(chosen) + 2]
    assert "invoked oom-killer" in invoked
    later_kill = lines[lines.index(invoked) + 3]
    assert "Killed process 13929," in later_kill
    (kill,) = scan([chosen, invoked, later_kill])
    assert (kill.pid, kill.chosen_pid, kill.score, kill.scope) == (13929, None, None, None)


def test_a_child_killed_for_its_parent_names_both() -> None:
    (kill,) = scan(sample("002"))
    assert (kill.pid, kill.process, kill.chosen_pid, kill.chosen_process) == (
        28438,
        "java",
        24572,
        "java",
    )


# --------------------------------------------------------------------- every prefix form

_PLAIN = re.compile(r"\[\s*(?P<secs>\d+)\.(?P<usecs>\d{6})\] (?P<body>.*)")


def _forms(lines: list[str]) -> dict[str, list[str]]:
    """The plain-`dmesg` lines of a real sample in the other forms a node's logs hold them."""
    parts = [_PLAIN.fullmatch(line) for line in lines]
    assert all(parts), "a plain dmesg sample"
    stamps = [(int(p["secs"]), p["usecs"], p["body"]) for p in parts if p]
    return {
        "dmesg": lines,
        "dmesg -T": [
            f"[Tue Jun 11 09:{s // 60 % 60:02d}:{s % 60:02d} 2024] {b}" for s, _, b in stamps
        ],
        "dmesg -x": [f"kern  :err   : [{s:>5}.{u}] {b}" for s, u, b in stamps],
        "journalctl -k": [
            f"Jun 11 09:{s // 60 % 60:02d}:{s % 60:02d} gpu-node-7 kernel: {b}"
            for s, _, b in stamps
        ],
        "syslog": [f"Jun 11 09:00:00 gpu-node-7 kernel: [{s:>5}.{u}] {b}" for s, u, b in stamps],
        "/dev/kmsg": [f"3,{n},{s}{u},-;{b}" for n, (s, u, b) in enumerate(stamps, 1000)],
    }


@pytest.mark.parametrize("prefix", ["006", "007", "010", "011"])
def test_the_same_kills_in_every_prefix_form(prefix: str) -> None:
    forms = _forms(sample(prefix))
    found = {
        form: [
            {k: v for k, v in asdict(kill).items() if k not in ("time", "lines")}
            for kill in scan(lines)
        ]
        for form, lines in forms.items()
    }
    assert found["dmesg"], "the sample has kills"
    for form, kills in found.items():
        assert kills == found["dmesg"], form


def test_kmsg_records_keep_the_kernel_clock() -> None:
    kmsg = _forms(sample("007"))["/dev/kmsg"]
    (kill,) = scan(kmsg)
    assert kill.time == "44930.378157"


# --------------------------------------------------------------------- the summary line


def test_summary_fields_of_a_cri_containerd_pod() -> None:
    (line,) = sample("012")
    summary = parse_summary(line.split(" kernel: ", 1)[1])
    assert summary is not None
    assert summary.task == "pt_main_thread"
    assert (summary.pid, summary.uid, summary.constraint) == (461754, 0, "CONSTRAINT_MEMCG")
    assert summary.nodemask == "(null)"
    assert summary.mems_allowed == "0-1"
    assert summary.cpuset == (
        "cri-containerd-ec9ee26695deb4cc72bc665efff1cf3a03fdfb12f1303e02fe9252985e084a95.scope"
    )
    assert summary.oom_memcg == (
        "/lxc.payload....-lxc/kubepods.slice/kubepods-burstable.slice/"
        "kubepods-burstable-podeded8c65_6e8e_4c6e_a889_3e427565c740.slice"
    )
    assert summary.task_memcg is not None
    assert summary.task_memcg.startswith("/lxc.payload.ny2g2r5hh3-lxc/kubepods.slice/")
    assert summary.task_memcg.endswith("/" + summary.cpuset)
    assert not summary.global_oom


def test_summary_of_a_global_oom() -> None:
    line = next(line for line in sample("008") if "oom-kill:" in line)
    summary = parse_summary(line.split(" ", 1)[1])
    assert summary is not None
    assert summary.global_oom
    assert (summary.constraint, summary.oom_memcg, summary.cpuset) == ("CONSTRAINT_NONE", None, "/")
    assert summary.task_memcg == "/user.slice/user-21417.slice/user@21417.service"


def test_lines_that_only_mention_oom_are_not_kills() -> None:
    """Real neighbours of OOM reports: the report header, task lists, call traces, the
    container runtime's "shim reaped", an audit line naming the killed unit."""
    neighbours = [
        line
        for prefix in ("003", "006", "007", "009", "010")
        for line in sample(prefix)
        if "Killed process" not in line
    ]
    assert any("shim reaped" in line for line in neighbours)
    assert any("oom_kill_process" in line for line in neighbours)
    kills = scan(neighbours)
    assert [k.pid for k in kills] == []
