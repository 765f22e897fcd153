"""The oom_kill check's declarations, findings, metrics, facts and config section."""

from __future__ import annotations

import msgspec
import pytest
from sitscheck.contract import Check, FindingKind, MetricKind, Severity

from oom_corpus import sample, scan
from sitscheck_oom_kill.check import OomKillCheck
from sitscheck_oom_kill.codes import CODES, PROCESS_KILLED
from sitscheck_oom_kill.facts import KernelLog, OomKillFacts, OomKillSettings
from sitscheck_oom_kill.judge import (
    BY_PROCESS_METRIC,
    KILLS_METRIC,
    facts_of,
    findings_of,
    message_of,
    metrics_of,
)

LOG = KernelLog(source="dmesg.txt", lines=100)
NONE: frozenset[str] = frozenset()


def test_the_check_provides_the_contract() -> None:
    check = OomKillCheck()
    assert isinstance(check, Check)
    assert check.evidence.kernel_log
    assert check.kernel_log is not None
    assert check.kernel_log.handler == "sitscheck_oom_kill.parse:OomKillLines"


def test_its_code_is_a_warning_event() -> None:
    spec = CODES.get(PROCESS_KILLED)
    assert spec is not None
    assert (spec.severity, spec.kind) == (Severity.WARNING, FindingKind.EVENT)
    assert CODES.normalise("OOM_KILL.Process_Killed") == PROCESS_KILLED
    assert CODES.normalise("oom_kill.nope") is None


def test_every_metric_it_emits_is_declared_with_its_kind() -> None:
    declared = {spec.name: spec.kind for spec in OomKillCheck.metrics}
    emitted = metrics_of(scan(sample("011")), NONE)
    assert {m.name for m in emitted} <= set(declared)
    assert declared == {KILLS_METRIC: MetricKind.EVENT, BY_PROCESS_METRIC: MetricKind.EVENT}


def test_one_finding_per_kill_with_process_memory_and_cgroup() -> None:
    (finding,) = findings_of(scan(sample("007")), NONE, "dmesg.txt")
    assert finding.code == PROCESS_KILLED
    assert finding.severity == Severity.WARNING
    assert finding.message.startswith("tritonserver (pid 59249) killed by the OOM killer")
    assert "anon-rss 96 MiB (total-vm 38061 MiB)" in finding.message  # 98544 kB, 38974820 kB
    assert (
        "memory cgroup /kubepods/burstable/podcb040dc7-7546-49e2-ae77-320dc45ed2ce reached its "
        "limit (CONSTRAINT_MEMCG)" in finding.message
    )
    assert finding.evidence[0].ref == "dmesg.txt"
    assert finding.evidence[0].excerpt is not None
    assert "Killed process 59249 (tritonserver)" in finding.evidence[0].excerpt


@pytest.mark.parametrize(
    ("prefix", "says"),
    [
        (
            "002",
            "java (pid 28438) killed by the OOM killer in place of its parent java (pid 24572)",
        ),
        ("002", "; a memory cgroup reached its limit"),
        ("008", "anon-rss 58942 MiB"),  # 60356340 kB
        ("008", "the node ran out of memory (CONSTRAINT_NONE), task cgroup /user.slice/"),
        ("005", "(resolved) (pid 15925) killed by the OOM killer at 518.061172: anon-rss 4.0 MiB"),
    ],
)
def test_the_message_says_what_the_report_says(prefix: str, says: str) -> None:
    messages = [message_of(kill) for kill in scan(sample(prefix))]
    assert any(says in message for message in messages), messages


def test_facts_follow_their_schema_and_count_the_kills() -> None:
    facts = facts_of(scan(sample("011")), NONE, LOG)
    dumped = msgspec.to_builtins(facts)
    assert msgspec.convert(dumped, OomKillFacts) == facts
    assert (dumped["count"], dumped["ignored"], len(dumped["kills"])) == (7, 0, 7)
    schema = msgspec.json.schema(OomKillFacts)["$defs"]["OomKillFacts"]
    assert {"kills", "count", "ignored", "log"} <= set(schema["properties"])


def test_ignored_processes_are_kept_in_the_facts_but_raise_and_count_nothing() -> None:
    kills = scan(sample("011"))  # 2 python3, 5 mount
    ignored = frozenset(OomKillSettings(ignore_processes=["mount"]).ignore_processes)
    facts = facts_of(kills, ignored, LOG)
    assert (facts.count, facts.ignored) == (2, 5)
    assert [k.process for k in facts.kills if not k.ignored] == ["python3", "python3"]
    findings = findings_of(kills, ignored, "dmesg.txt")
    assert [f.message.split(" ", 1)[0] for f in findings] == ["python3", "python3"]
    metrics = {
        (m.name, tuple(sorted(m.labels.items()))): m.value for m in metrics_of(kills, ignored)
    }
    assert metrics == {
        (KILLS_METRIC, ()): 2,
        (BY_PROCESS_METRIC, (("process", "python3"), ("scope", "memcg"))): 2,
    }


def test_config_section_rejects_unknown_keys_and_names_the_kernel_never_prints() -> None:
    assert OomKillSettings().ignore_processes == []
    with pytest.raises(msgspec.ValidationError, match="ignore_process"):
        msgspec.convert({"ignore_process": ["x"]}, OomKillSettings)
    with pytest.raises(ValueError, match="at most 15 characters"):
        OomKillSettings(ignore_processes=["tritonserver-main"])  # 17: comm keeps 15
