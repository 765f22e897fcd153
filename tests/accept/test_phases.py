"""Running the planned phases (`sitscheck.accept.phases`) and the session around them
(`sitscheck.accept.session`), without NVML and without a GPU.

The GPUs are `FakeGpus` (a `NodeGpus` answering from plain values) and the workload is
`fake_workloads.behave`, picked per GPU with the test-only `--inject PHASE-BEHAVIOUR:GPU`.
Each planned phase starts now and has an hour: nothing here waits on a cooldown or a
deadline (the deadlines are children's tests).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fake_workloads
import pytest
from sitscheck.accept import phases as phases_module
from sitscheck.accept.phases import (
    Injection,
    PhaseContext,
    memory_after_stop,
    record_name,
    run_plan,
)
from sitscheck.accept.plan import Plan, PlannedPhase
from sitscheck.accept.session import blocked_gpus
from sitscheck.models import CheckResult, Device, Finding, Severity, Status
from sitscheck.workloads.children import Target
from sitscheck.workloads.gpus import NodeGpus

MODULE = fake_workloads.MODULE
HOUR = 3600.0
GIB = 1 << 30
XID_79 = "not run: xid.79 (critical) before the phase: GPU 1 fell off the bus"


@pytest.fixture(autouse=True)
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return fake_workloads.prepare(tmp_path, monkeypatch)


class FakeGpus(NodeGpus):
    """`count` GPUs; ECC counters that grow by one corrected error a read; memory in use
    from `memory` (a list of values per GPU, read in turn, the last one kept)."""

    def __init__(self, count: int, memory: dict[int, list[int | None]] | None = None) -> None:
        super().__init__(None)
        self.targets = [
            Target(i, f"GPU-fake-{i}", f"0000:{0x19 + i:02x}:00.0", "NVIDIA H200")
            for i in range(count)
        ]
        self.memory = memory or {i: [GIB // 2] for i in range(count)}
        self.reads: dict[str, int] = {}

    def _count(self, what: str) -> int:
        self.reads[what] = self.reads.get(what, 0) + 1
        return self.reads[what]

    def memory_used(self, index: int) -> int | None:
        values = self.memory[index]
        return values.pop(0) if len(values) > 1 else values[0]

    def ecc_state(self, index: int) -> dict[str, Any] | None:
        n = self._count(f"ecc{index}")
        return {"volatile_corrected": n, "volatile_uncorrected": 0, "remap_pending": False,
                "remap_failure": False, "retired_pages": 0}  # fmt: skip

    def violations_ns(self, index: int) -> dict[str, int]:
        return {"power": 1000 * self._count(f"violations{index}"), "thermal": 0}

    def max_sm_clock(self, index: int) -> int | None:
        return 1980

    def sample(self, index: int, at: float) -> dict[str, Any]:
        return {"t": round(at, 3), "sm_clock_mhz": 1485, "power_w": 690.0, "temp_c": 60,
                "clock_event_reasons": 4}  # fmt: skip


def phase(name: str, gpus: tuple[int, ...] = (0, 1), skipped: str | None = None) -> PlannedPhase:
    """A phase that starts now and may take an hour (no cooldown, no deadline reached)."""
    if skipped is not None:
        return PlannedPhase(name, 0.0, 0.0, 0.0, 0.0, (), skipped, module=MODULE)
    return PlannedPhase(name, 0.0, HOUR, 5.0, 0.0, gpus, module=MODULE, startup_s=1.0)


def context(
    gpus: NodeGpus,
    stopped: Callable[[], bool] = lambda: False,
    blocked: dict[int, str] | None = None,
    injections: tuple[Injection, ...] = (),
) -> PhaseContext:
    return PhaseContext(
        gpus=gpus,
        began=time.monotonic(),
        stopped=stopped,
        engine="auto",
        injections=injections,
        blocked=dict(blocked or {}),
        baseline_used={t.index: gpus.memory_used(t.index) for t in gpus.targets},
    )


def records(plan: Plan, ctx: PhaseContext, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {name: json.loads(text) for name, text in run_plan(plan, ctx, extra or {}).items()}


def entries(record: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {e["index"]: e for e in record["gpus"]}


PHASES = ("memtest", "compute", "soak")


def test_every_phase_run_writes_its_record_with_what_the_parent_adds(marks: Path) -> None:
    gpus = FakeGpus(2)
    bandwidth = {"engine": "ptx", "probe": "python -m sitscheck.probes.bandwidth",
                 "measured": True, "reason": None}  # fmt: skip
    plan = Plan(300.0, (*(phase(n) for n in PHASES), phase("bandwidth"),
                        phase("multigpu", skipped="not applicable: one GPU")))  # fmt: skip
    found = records(plan, context(gpus), {"bandwidth": lambda p: bandwidth})
    assert list(found) == [record_name(n) for n in (*PHASES, "bandwidth", "multigpu")]
    for name in PHASES:
        record = found[record_name(name)]
        assert record["format"] == "sitscheck-accept" and record["version"] == 1
        assert record["phase"] == name and record["engine"] == "fake"
        assert record["planned_s"] == HOUR and record["skipped"] is None
        assert record["started_at"].endswith("+00:00")
        assert [e["status"] for e in record["gpus"]] == ["ok", "ok"]
        for index, entry in entries(record).items():
            assert entry["uuid"] == f"GPU-fake-{index}" and entry["name"] == "NVIDIA H200"
            assert entry["pci_bus_id"] == f"0000:{0x19 + index:02x}:00.0"
            assert entry["result"]["uuid"] == entry["uuid"]  # each child saw its own GPU
            assert entry["result"]["seconds_asked"] == 5.0 and entry["reason"] is None
            assert entry["doing"] == f"{name}: fake work on GPU-fake-{index}"
    memtest = entries(found["accept/memtest.json"])[0]["result"]
    assert memtest["ecc_before"]["volatile_corrected"] == 1  # read before the test...
    assert memtest["ecc_after"]["volatile_corrected"] == 2  # ...and after it
    soak = entries(found["accept/soak.json"])[1]["result"]
    assert soak["expect_digest"] == "d-compute"  # compute's digest, checked under load
    assert soak["times"] == [[1.0, [1.5, 1.6]], [2.0, [1.7]]]
    assert soak["samples"] and soak["samples"][0]["clock_event_reasons"] == 4
    assert soak["max_sm_clock_mhz"] == 1980
    assert soak["violation_ns"] == {"power": [1000, 2000], "thermal": [0, 0]}
    assert found["accept/bandwidth.json"]["measured"] is True
    assert found["accept/bandwidth.json"]["gpus"] == []
    multigpu = found["accept/multigpu.json"]
    assert multigpu["skipped"] == "not applicable: one GPU" and multigpu["gpus"] == []


def test_a_skipped_phase_says_why_and_runs_nothing(marks: Path) -> None:
    plan = Plan(300.0, (phase("memtest", skipped="--skip memtest"),))
    (record,) = records(plan, context(FakeGpus(2))).values()
    assert record["skipped"] == "--skip memtest" and record["gpus"] == []
    assert record["engine"] is None and not list(marks.iterdir())


def test_a_blocked_gpu_says_why_in_every_phase_and_the_others_run(marks: Path) -> None:
    plan = Plan(300.0, tuple(phase(n) for n in PHASES))
    found = records(plan, context(FakeGpus(2), blocked={1: XID_79}))
    for record in found.values():
        zero, one = entries(record)[0], entries(record)[1]
        assert zero["status"] == "ok"
        assert one == {"index": 1, "uuid": "GPU-fake-1", "pci_bus_id": "0000:1a:00.0",
                       "name": "NVIDIA H200", "status": "not_run", "reason": XID_79,
                       "doing": None, "seconds": None, "result": None}  # fmt: skip
    started = sorted(p.name for p in marks.glob("*.pids"))
    assert started == [f"GPU-fake-0.{n}.pids" for n in sorted(PHASES)]


def test_a_child_that_fails_is_recorded_failed_with_its_reason(marks: Path) -> None:
    plan = Plan(300.0, (phase("compute"),))
    injections = (Injection("compute-error", 1), Injection("memtest-segv", 0))
    (record,) = records(plan, context(FakeGpus(2), injections=injections)).values()
    assert entries(record)[0]["status"] == "ok"  # the memtest fault is not compute's
    assert entries(record)[1]["status"] == "failed"
    assert entries(record)[1]["reason"] == "cuInit failed (fake): CUDA_ERROR_NO_DEVICE"


def test_a_stop_before_the_phases_marks_every_gpu_not_run(marks: Path) -> None:
    plan = Plan(300.0, (phase("memtest"), phase("compute", skipped="--skip compute")))
    found = records(plan, context(FakeGpus(2), stopped=lambda: True, blocked={1: XID_79}))
    memtest = entries(found["accept/memtest.json"])
    assert memtest[0]["status"] == "not_run"
    assert memtest[0]["reason"] == "interrupted before the phase started"
    assert memtest[1]["status"] == "not_run" and memtest[1]["reason"] == XID_79
    assert found["accept/compute.json"]["skipped"] == "--skip compute"
    assert not list(marks.iterdir())  # no child was started


def test_a_stop_mid_phase_interrupts_it_and_the_later_phases_do_not_run(marks: Path) -> None:
    def stopped() -> bool:  # once both compute children say what they do
        return len(list(marks.glob("*.compute.doing"))) == 2

    plan = Plan(300.0, tuple(phase(n) for n in PHASES))
    injections = (Injection("compute-hang", 0), Injection("compute-hang", 1))
    gpus = FakeGpus(2, memory={0: [GIB // 2, 100 * GIB, GIB // 2], 1: [GIB // 2]})
    found = records(plan, context(gpus, stopped=stopped, injections=injections))
    assert [e["status"] for e in found["accept/memtest.json"]["gpus"]] == ["ok", "ok"]
    compute = found["accept/compute.json"]
    assert [e["status"] for e in compute["gpus"]] == ["interrupted", "interrupted"]
    assert entries(compute)[0]["reason"] == (
        "stopped by a signal while compute: fake work on GPU-fake-0"
    )
    memory = compute["memory_after_stop"]
    assert memory["back_at_baseline"] is True
    assert memory["gpus"] == [
        {"index": 0, "baseline_bytes": GIB // 2, "used_bytes": GIB // 2},
        {"index": 1, "baseline_bytes": GIB // 2, "used_bytes": GIB // 2},
    ]
    soak = entries(found["accept/soak.json"])
    assert {e["status"] for e in soak.values()} == {"not_run"}
    assert soak[0]["reason"] == "interrupted before the phase started"
    assert "memory_after_stop" not in found["accept/memtest.json"]


def test_memory_after_stop_waits_for_it_to_come_back() -> None:
    gpus = FakeGpus(1, memory={0: [GIB, 80 * GIB, 80 * GIB, 80 * GIB, GIB]})
    ctx = context(gpus)
    found = memory_after_stop(ctx)
    assert found["back_at_baseline"] is True and found["after_s"] > 0
    assert found["gpus"] == [{"index": 0, "baseline_bytes": GIB, "used_bytes": GIB}]


@pytest.fixture
def short_settle(monkeypatch: pytest.MonkeyPatch) -> float:
    """A settle time of 0.2 s (1 s in a run): what is polled until it passes is the same."""
    monkeypatch.setattr(phases_module, "MEMORY_SETTLE_S", 0.2)
    return 0.2


def test_memory_that_stays_in_use_is_reported_after_the_settle_time(short_settle: float) -> None:
    gpus = FakeGpus(2, memory={0: [GIB, GIB], 1: [GIB, 20 * GIB]})
    found = memory_after_stop(context(gpus))
    assert found["back_at_baseline"] is False and found["after_s"] >= short_settle
    assert found["gpus"][1] == {"index": 1, "baseline_bytes": GIB, "used_bytes": 20 * GIB}


def test_memory_not_readable_is_never_back_at_baseline(short_settle: float) -> None:
    gpus = FakeGpus(1, memory={0: [None]})
    found = memory_after_stop(context(gpus))
    assert found["back_at_baseline"] is False
    assert found["gpus"] == [{"index": 0, "baseline_bytes": None, "used_bytes": None}]


def test_memory_within_the_slack_is_back() -> None:
    gpus = FakeGpus(1, memory={0: [GIB, GIB + phases_module.MEMORY_SLACK_BYTES]})
    assert memory_after_stop(context(gpus))["back_at_baseline"] is True


# ---- which GPUs a passive finding blocks ------------------------------------------------------


def result(*findings: Finding) -> CheckResult:
    return CheckResult(name="passive", status=Status.CRITICAL, findings=list(findings))


def finding(severity: Severity, device: Device | None, code: str = "xid.79") -> Finding:
    return Finding(code=code, severity=severity, message="what it found", device=device)


TARGETS = FakeGpus(3).targets


def test_a_critical_finding_on_a_gpu_blocks_that_gpu() -> None:
    found = blocked_gpus([result(finding(Severity.CRITICAL, Device(index=1)))], TARGETS)
    assert found == {1: "not run: xid.79 (critical) before the phase: what it found"}


def test_a_critical_finding_of_the_whole_node_blocks_every_gpu() -> None:
    found = blocked_gpus([result(finding(Severity.CRITICAL, None, "driver.missing"))], TARGETS)
    assert sorted(found) == [0, 1, 2]


def test_a_warning_blocks_nothing() -> None:
    assert blocked_gpus([result(finding(Severity.WARNING, Device(index=0)))], TARGETS) == {}


def test_a_finding_naming_a_gpu_by_its_bus_id_alone_blocks_that_gpu() -> None:
    device = Device(pci_bus_id="00000000:1A:00.0")  # NVML's spelling of GPU 1's
    assert list(blocked_gpus([result(finding(Severity.CRITICAL, device))], TARGETS)) == [1]


def test_a_critical_finding_on_a_nic_blocks_no_gpu() -> None:
    """An InfiniBand port down is critical, but no reason to leave the GPUs untested."""
    nic = Device(pci_bus_id="0000:9a:00.0", name="mlx5_0")
    found = blocked_gpus([result(finding(Severity.CRITICAL, nic, "infiniband.port_down"))],
                         TARGETS)  # fmt: skip
    assert found == {}


def test_the_first_critical_finding_of_a_gpu_is_its_reason() -> None:
    first = finding(Severity.CRITICAL, Device(index=2), "remap.failure")
    found = blocked_gpus([result(first, finding(Severity.CRITICAL, Device(index=2)))], TARGETS)
    assert found[2].startswith("not run: remap.failure (critical)")


def test_a_gpu_whose_bus_id_nvml_could_not_read_is_matched_by_index() -> None:
    targets = [Target(0, "GPU-a", None, None), Target(1, "", None, None)]
    device = Device(index=1, pci_bus_id="0000:1a:00.0")
    assert list(blocked_gpus([result(finding(Severity.CRITICAL, device))], targets)) == [1]


def test_a_critical_passive_finding_on_gpu_1_keeps_every_phase_off_it(marks: Path) -> None:
    """The session: the passive checks first (here one that finds an Xid 79 on GPU 1), then
    the phases, which load GPU 0 only and say on GPU 1 why they did not run."""
    from fakes.fake_checks import FakeCheck
    from sitscheck.accept.session import Acceptance
    from sitscheck.config import RunConfig
    from sitscheck.contract import CheckOutput
    from sitscheck.contract.evidence import DeclaredEvidence
    from sitscheck.sources.replay import replay_sources

    xid = Finding(code="xid.79", severity=Severity.CRITICAL, message="GPU 1 fell off the bus",
                  device=Device(index=1, pci_bus_id="0000:1a:00.0"))  # fmt: skip
    check = FakeCheck("xid", CheckOutput(findings=[xid]))
    gpus = FakeGpus(2)
    plan = Plan(300.0, tuple(phase(n) for n in PHASES))
    acceptance = Acceptance(RunConfig(), plan, gpus, "auto", time.monotonic(), lambda: False,
                            False, DeclaredEvidence())  # fmt: skip
    bundle = Path(__file__).resolve().parent.parent / "bundles" / "h200x2-idle-v0"
    with replay_sources(str(bundle)) as sources:
        (passive,) = acceptance.run([check], sources, {}, time.monotonic() + HOUR)
    assert passive.status == Status.CRITICAL
    assert acceptance.blocked == {1: f"not run: xid.79 (critical) before the phase: {xid.message}"}
    for name in PHASES:
        found = entries(json.loads(acceptance.records[record_name(name)]))
        assert found[0]["status"] == "ok"
        assert found[1]["status"] == "not_run" and found[1]["reason"] == acceptance.blocked[1]
    assert not list(marks.glob("GPU-fake-1.*"))  # no child ever started on GPU 1


def test_a_soak_whose_sampler_thread_is_refused_is_not_run_saying_why(
    marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sampler's thread starts through `threads.start_daemon`; where the system refuses it
    (`ulimit -v`, a thread limit) the soak does not run blind: no child starts, every GPU is
    not run with the reason (the soak check is UNKNOWN), a blocked GPU keeps its own."""
    from sitscheck.threads import CannotStart
    from sitscheck.workloads import gpus as gpus_module

    def refused(*args: Any, name: str, **kwargs: Any) -> Any:
        raise CannotStart(f"could not start a thread ({name}): can't start new thread")

    monkeypatch.setattr(gpus_module, "start_daemon", refused)
    gpus = FakeGpus(3)
    found = entries(records(Plan(300.0, (phase("soak", (0, 1, 2)),)),
                            context(gpus, blocked={2: XID_79}))["accept/soak.json"])  # fmt: skip
    why = ("not run: could not start a thread (soak-sampler): can't start new thread: the soak "
           "is not run without its trace")  # fmt: skip
    assert [(e["status"], e["reason"]) for e in found.values()] == [
        ("not_run", why), ("not_run", why), ("not_run", XID_79)
    ]  # fmt: skip
    assert not list(marks.glob("GPU-fake-*"))  # no child started


@pytest.mark.parametrize(
    ("planned", "blocked", "probed"),
    [
        ((0, 1), True, ("GPU-fake-0",)),  # GPU 1: an Xid 79 before the phase
        ((1,), False, ("GPU-fake-1",)),  # --gpus 1
        ((1,), True, ()),  # --gpus 1, and GPU 1 kept out: no probe at all
    ],
)
def test_the_bandwidth_probe_loads_the_phases_gpus_alone(
    planned: tuple[int, ...], blocked: bool, probed: tuple[str, ...]
) -> None:
    """The session hands the bandwidth phase's GPUs (the plan's, less those a critical passive
    finding keeps out) to the probe, which sees those alone (its CUDA_VISIBLE_DEVICES: see
    tests/bandwidth, test_the_probe_sees_only_the_gpus_it_is_given)."""
    from types import SimpleNamespace

    from fakes.fake_checks import FakeCheck
    from sitscheck.accept.session import Acceptance
    from sitscheck.config import RunConfig
    from sitscheck.contract import CheckOutput
    from sitscheck.contract.evidence import DeclaredEvidence
    from sitscheck.probes.bandwidth import BANDWIDTH_JSON
    from sitscheck.sources.base import Artifact
    from sitscheck.sources.replay import replay_sources

    xid = Finding(code="xid.79", severity=Severity.CRITICAL, message="GPU 1 fell off the bus",
                  device=Device(index=1, pci_bus_id="0000:1a:00.0"))  # fmt: skip
    check = FakeCheck("xid", CheckOutput(findings=[xid] if blocked else []))
    asked: list[tuple[str, ...] | None] = []
    options = SimpleNamespace(bandwidth_s=None, bandwidth_gpus=None)

    class Sources:
        """The replayed node, with a live node's options and a probe that says what it got."""

        def __init__(self, replayed: Any) -> None:
            self.replayed, self.options, self.records = replayed, options, {}

        def __getattr__(self, name: str) -> Any:
            return getattr(self.replayed, name)

        def artifact(self, name: str) -> Artifact:
            if name != BANDWIDTH_JSON:
                return self.replayed.artifact(name)  # type: ignore[no-any-return]
            asked.append(options.bandwidth_gpus)
            return Artifact(name, None, "python -m sitscheck.probes.bandwidth", reason="no CUDA")

    bandwidth = PlannedPhase("bandwidth", 0.0, HOUR, 8.0, 0.0, planned, module="x")
    acceptance = Acceptance(RunConfig(), Plan(300.0, (bandwidth,)), FakeGpus(2), "auto",
                            time.monotonic(), lambda: False, False, DeclaredEvidence())  # fmt: skip
    bundle = Path(__file__).resolve().parent.parent / "bundles" / "h200x2-idle-v0"
    with replay_sources(str(bundle)) as replayed:
        acceptance.run([check], Sources(replayed), {}, time.monotonic() + HOUR)
    assert asked == [probed]


def test_the_bandwidth_probe_is_given_a_deadline_that_ends_within_its_phase() -> None:
    """The probe runs until its deadline plus GRACE_S to print; both fit in the phase."""
    from types import SimpleNamespace

    from sitscheck.accept.session import _bandwidth
    from sitscheck.sources.base import Artifact
    from sitscheck.workloads.bandwidth import GRACE_S

    asked: list[float] = []
    options = SimpleNamespace(bandwidth_s=None, bandwidth_gpus=None)

    def artifact(name: str) -> Artifact:
        asked.append(options.bandwidth_s)
        return Artifact(name, None, "python -m sitscheck.probes.bandwidth", reason="no CUDA")

    sources = SimpleNamespace(options=options, artifact=artifact, records={})
    bandwidth = PlannedPhase("bandwidth", 267.0, 18.0, 8.0, 10.0, (0,), module="x")
    record = _bandwidth(sources, bandwidth, TARGETS[:1])  # type: ignore[arg-type]
    assert asked and asked[0] + GRACE_S <= bandwidth.seconds
    assert record == {"engine": "ptx", "probe": "python -m sitscheck.probes.bandwidth",
                      "measured": False, "reason": "no CUDA"}  # fmt: skip
