"""Pure: what the GPU inventory says by itself (lost GPUs, the count, persistence mode, the
driver's recovery action, VBIOS spread) and what its sources disagree on."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from sitscheck.gpu.calls import source_name
from sitscheck.gpu.view import Disagreement
from sitscheck.models import Evidence, Finding, Severity

from .codes import CODES
from .inventory import GpuEntry, Inventory

RECOVERY_ADVICE = {
    "reset": (Severity.CRITICAL, "drain the GPU and reset it (nvidia-smi -r)"),
    "reboot": (Severity.CRITICAL, "drain the node and reboot it"),
    "drain_p2p": (
        Severity.WARNING,
        "stop peer-to-peer (NVLink) traffic on the GPU: drain its jobs until the driver clears it",
    ),
    "drain_and_reset": (Severity.CRITICAL, "drain the GPU's jobs, then reset the GPU"),
}
COUNT_ACTION = "find the missing GPU (nvidia-smi -L, lspci, kernel log); reseat or RMA"


def judge(inventory: Inventory, expect_gpus: int | None) -> list[Finding]:
    findings = _count(inventory, expect_gpus)
    for gpu in inventory.gpus:
        if gpu.state != "ok":
            findings.append(
                Finding(
                    code=f"driver.{gpu.state}",
                    severity=Severity.CRITICAL,
                    message=(
                        f"GPU {gpu.index} is listed but does not answer ({gpu.state}): "
                        f"{gpu.detail or ''}"
                    ).strip(),
                    device=gpu.device(),
                    evidence=gpu.evidence("lost"),
                    action=(
                        "reset the GPU (nvidia-smi -r) or reboot the node; "
                        "if it recurs, inspect hardware"
                    ),
                )
            )
        else:
            findings.extend(_gpu_state(gpu))
    findings.extend(_version_spread(inventory))
    return findings


def _count(inventory: Inventory, expect_gpus: int | None) -> list[Finding]:
    if expect_gpus is None:
        return []
    evidence = [Evidence(source=inventory.source, ref=inventory.ref)]
    present = [g for g in inventory.gpus if g.state == "ok"]
    if not inventory.complete:
        attached = inventory.attached
        if attached is None or attached >= expect_gpus:
            return []  # the rest are not shown: unjudged() says so
        message = f"{attached} GPUs attached, {expect_gpus} expected"
    elif len(present) != expect_gpus:
        message = f"{len(present)} GPUs answer, {expect_gpus} expected"
    else:
        return []
    return [
        Finding(
            code="driver.gpu_count",
            severity=Severity.CRITICAL,
            message=message,
            evidence=evidence,
            action=COUNT_ACTION,
        )
    ]


def unjudged(inventory: Inventory, expect_gpus: int | None) -> list[str]:
    """What could not be judged: per answering GPU persistence mode and recovery action, and
    the count where the evidence shows only some of the GPUs."""
    notes: list[str] = []
    if not inventory.complete and expect_gpus is not None:
        notes.append(
            f"GPU count: the evidence shows {len(inventory.gpus)} of the "
            f"{inventory.attached} attached GPUs ({', '.join(inventory.sources)})"
        )
    for gpu in inventory.gpus:
        if gpu.state != "ok":
            continue
        outputs = ", ".join(gpu.refs) or inventory.source
        if gpu.persistence_mode is None:
            notes.append(f"GPU {gpu.index}: persistence mode: not in {outputs} output")
        if gpu.recovery_action is None:
            notes.append(f"GPU {gpu.index}: recovery action: not in {outputs} output")
    return notes


def _gpu_state(gpu: GpuEntry) -> list[Finding]:
    """Persistence mode and the driver's recovery action of a GPU that answers."""
    findings: list[Finding] = []
    if gpu.persistence_mode is False:
        findings.append(
            Finding(
                code="driver.persistence_mode_off",
                severity=Severity.WARNING,
                message=(
                    f"GPU {gpu.index}: persistence mode is off: the driver tears the GPU down "
                    "when no client holds it, so each job pays the start-up latency"
                ),
                device=gpu.device(),
                evidence=gpu.evidence("persistence_mode"),
                action="run nvidia-persistenced (systemctl enable --now nvidia-persistenced)",
            )
        )
    action = gpu.recovery_action
    if action is not None and action != "none":
        severity, advice = RECOVERY_ADVICE.get(
            action, (Severity.CRITICAL, "follow the driver's recovery action for this GPU")
        )
        findings.append(
            Finding(
                code="driver.recovery_action",
                severity=severity,
                message=f"GPU {gpu.index}: the driver asks for recovery action '{action}'",
                device=gpu.device(),
                evidence=gpu.evidence("recovery_action"),
                action=advice,
            )
        )
    return findings


def _version_spread(inventory: Inventory) -> list[Finding]:
    """GPUs of one model on different VBIOS: one finding on each GPU off the model's reference
    version (the most common one; on a tie the newest, the one to flash the others to)."""
    by_model: dict[str, dict[str, list[GpuEntry]]] = defaultdict(lambda: defaultdict(list))
    for gpu in inventory.gpus:
        if gpu.vbios and gpu.name:
            by_model[gpu.name][gpu.vbios].append(gpu)
    findings = []
    for model, versions in sorted(by_model.items()):
        if len(versions) < 2:
            continue
        counts = Counter({v: len(g) for v, g in versions.items()})
        reference = max(counts, key=lambda v: (counts[v], _version_key(v)))
        on_reference = ", ".join(str(g.index) for g in versions[reference])
        for version, gpus in sorted(versions.items()):
            if version == reference:
                continue
            for gpu in gpus:
                findings.append(
                    Finding(
                        code="driver.vbios_mismatch",
                        severity=Severity.WARNING,
                        message=(
                            f"GPU {gpu.index} ({model}): VBIOS {version}, while GPU "
                            f"{on_reference} run {reference}"
                        ),
                        device=gpu.device(),
                        evidence=gpu.evidence("vbios"),
                        action=(
                            "flash all GPUs to the same VBIOS during the next maintenance window"
                        ),
                    )
                )
    return findings


def _version_key(version: str) -> tuple[int, ...]:
    """``96.00.A5.00.1A`` → its fields as hex numbers (VBIOS versions are hex-dotted)."""
    parts = []
    for part in version.split("."):
        try:
            parts.append(int(part, 16))
        except ValueError:
            parts.append(-1)
    return tuple(parts)


def count_mismatch(listed: Mapping[str, int], refs: Mapping[str, str]) -> list[Finding]:
    """Sources that each list every GPU of the node and list different numbers of them."""
    counts = {source_name(s): n for s, n in listed.items()}
    if len(set(counts.values())) <= 1:
        return []
    said = ", ".join(f"{s} lists {n}" for s, n in counts.items())
    return [
        Finding(
            code="driver.count_mismatch",
            severity=Severity.CRITICAL,
            message=f"the GPU count differs between sources: {said}",
            evidence=[Evidence(source=source_name(s), ref=refs.get(s, s)) for s in listed],
            action="a GPU is dropping in and out: check the kernel log for Xid 79 and AER errors",
        )
    ]


def sources_disagree(disagreements: Sequence[Disagreement]) -> list[Finding]:
    """One warning per value two sources read differently, naming both and their values."""
    findings = []
    for item in disagreements:
        (first, first_ref, _), (second, second_ref, _) = item.first, item.second
        findings.append(
            Finding(
                code="driver.sources_disagree",
                severity=Severity.WARNING,
                message=item.message(),
                device=item.device(),
                evidence=[
                    Evidence(source=source_name(first), ref=first_ref),
                    Evidence(source=source_name(second), ref=second_ref),
                ],
                action=action_of("driver.sources_disagree"),
            )
        )
    return findings


def action_of(code: str) -> str:
    """The action the codes table gives `code`."""
    spec = CODES.get(code)
    assert spec is not None, code
    return spec.action
