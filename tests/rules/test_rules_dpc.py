"""A DPC containment on a GPU's PCIe path is the PCIe root cause of the GPU's Xid 79, whichever
error triggered it (ERR_FATAL or an unmasked non-fatal one): the port took the link down.

The AER side (events on the path, counted per GPU) is judged from reports as the kernel prints
them; the rule side from the recorded idle 2×H200 bundle's facts, edited per case.
"""

from __future__ import annotations

from typing import Any

import pytest
from rule_cases import edited, evaluate, fired_on, profile_of
from sitscheck.checks.pcie_aer.judge import GpuPath, findings, gpu_summary
from sitscheck.checks.pcie_aer.parse import parse_aer
from sitscheck.checks.pcie_aer.tally import AerTally
from sitscheck.gpu.identity import GpuRef
from sitscheck.kernlog.lines import iter_kernel_lines
from sitscheck.models import CheckResult, Severity

XID79 = {"xids": {"79": 1}, "fallen_off_bus": True, "critical": True}

# A root port above an H100 contains its link on an unmasked (non-fatal) error: the port's own
# block is printed (4.19 .. 6.15 wording), and the GPU is gone.
UNMASKED = """
[ 812.100001] pcieport 0000:15:01.0: DPC: containment event, status:0x1f01 source:0x0000
[ 812.100002] pcieport 0000:15:01.0: DPC: unmasked uncorrectable error detected
[ 812.100010] pcieport 0000:15:01.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)
[ 812.100011] pcieport 0000:15:01.0:   device [8086:352a] error status/mask=00004000/00100020
[ 812.100012] pcieport 0000:15:01.0:    [14] CmpltTO                (First)
"""  # noqa: E501
# ERR_FATAL from a device below the root port, source id only (no device named).
FATAL_SOURCE_ONLY = """
[ 900.000001] pcieport 0000:15:01.0: DPC: containment event, status:0x1f05 source:0x1800
[ 900.000002] pcieport 0000:15:01.0: DPC: ERR_FATAL detected
"""


def _path(ports: list[str]) -> GpuPath:
    return GpuPath(GpuRef(1, "0000:18:00.0", "NVIDIA H100 80GB HBM3"), ports)


@pytest.mark.parametrize("log", [UNMASKED, FATAL_SOURCE_ONLY])
def test_a_containment_by_a_port_on_the_path_is_the_gpus(log: str) -> None:
    events = AerTally.of(parse_aer(iter_kernel_lines(log.strip().splitlines())))
    on_path = _path(["0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:18:00.0"])
    elsewhere = _path(["0000:9a:01.0", "0000:18:00.0"])
    assert gpu_summary(on_path, events)["containments"] == 1
    assert gpu_summary(elsewhere, events)["containments"] == 0
    raised = findings([on_path], events, "dmesg")
    assert [(f.device.index if f.device else None) for f in raised] == [1]
    assert "DPC containment" in raised[0].message and "port above GPU 1" in raised[0].message


def test_a_report_that_is_no_containment_counts_none() -> None:
    log = """
pcieport 0000:15:01.0: AER: Uncorrectable (Fatal) error message received from 0000:18:00.0
nvidia 0000:18:00.0: AER: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Inaccessible, (Unregistered Agent ID)
"""  # noqa: E501
    events = AerTally.of(parse_aer(iter_kernel_lines(log.strip().splitlines())))
    summary = gpu_summary(_path(["0000:15:01.0", "0000:18:00.0"]), events)
    assert summary["containments"] == 0 and summary["events"]["fatal"] == 1
    assert [f.severity for f in findings([_path(["0000:18:00.0"])], events, "x")] == [
        Severity.CRITICAL
    ]


def _fired(idle_results: list[CheckResult], edits: dict[str, dict[str, Any]]) -> list[int | None]:
    verdicts = evaluate(edited(idle_results, edits), profile_of("h200-sxm"))
    return fired_on(verdicts, "quick_check.fell_off_bus_pcie")


def test_xid79_with_a_nonfatal_containment_on_the_path_is_the_pcie_layers(
    idle_results: list[CheckResult],
) -> None:
    edits = {"xid@1": XID79, "pcie_aer@1": {"events.nonfatal": 1, "containments": 1}}
    assert _fired(idle_results, edits) == [1]


def test_xid79_with_a_nonfatal_aer_error_but_no_containment_is_not(
    idle_results: list[CheckResult],
) -> None:
    edits = {"xid@1": XID79, "pcie_aer@1": {"events.nonfatal": 1, "containments": 0}}
    assert _fired(idle_results, edits) == []


def test_a_containment_without_xid79_is_no_lost_gpu(idle_results: list[CheckResult]) -> None:
    assert _fired(idle_results, {"pcie_aer@0": {"events.fatal": 1, "containments": 1}}) == []
