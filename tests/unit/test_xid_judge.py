"""sitscheck.checks.xid.judge: which Xid groups are marked sympathetic to another error, on
real log lines (tests/corpus/shared/xid) with their bus ids edited per case.

Xid 74 (NVLink error) on the link peer of a GPU with a critical Xid is most likely that GPU's
consequence; on the GPU with the critical Xid it is part of that GPU's own failure. Xid 45
(preemptive channel removal) beside another Xid of the same GPU is that Xid's consequence."""

# Log samples are kept verbatim, as wide as the kernel printed them.
# ruff: noqa: E501

from __future__ import annotations

from sitscheck.checks.xid.judge import Group, findings, group_events
from sitscheck.checks.xid.parse import parse_xid
from sitscheck.checks.xid.tally import XidTally
from sitscheck.kernlog.lines import iter_kernel_lines
from sitscheck.models import Severity

# tests/corpus/shared/xid/028-xid62-with-pid-name-nvtop-dmesg-T-3090.txt: a critical Xid (62)
XID62 = "[Mon May  4 14:09:23 2026] NVRM: Xid (PCI:{bus}): 62, pid=213710, name=nvtop, 323b6a66 000066f0 00000000 2029d806 2029da2c 2029de9c 202fa89e 202facec"
# tests/corpus/shared/xid/002-xid13-illegal-instruction-syslog-relion.txt: a warning (Xid 13)
XID13 = "Feb 15 17:37:45 Gipfeli kernel: [82659.755847] NVRM: Xid (PCI:{bus}): 13, Graphics Exception: ESR 0x5067b0=0x9 0x5067b4=0x24 0x5067a8=0x4c1eb72 0x5067ac=0x174"
# The NVLink Xid as the driver prints it (tests/unit/test_xid_parse.py: the corpus holds no
# Xid 74 line), its time and bus id as the lines it is mixed with.
XID74 = "[Mon May  4 14:09:24 2026] NVRM: Xid (PCI:{bus}): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)"
# tests/corpus/shared/xid/015-xid45-caused-by-previous-xid149-145.txt: Xid 45
XID45 = "kernel: NVRM: Xid (PCI:{bus}): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149"

GPU_A, GPU_B = "0000:3e:00", "0000:b9:00"


def groups(*lines: str) -> dict[tuple[str | None, int], Group]:
    tally = XidTally.of(parse_xid(iter_kernel_lines(list(lines))))
    return {(g.device, g.code): g for g in group_events(tally)}


def test_xid74_on_the_peer_of_a_gpu_with_a_critical_xid_is_marked_sympathetic() -> None:
    found = groups(XID62.format(bus=GPU_A), XID74.format(bus=GPU_B))
    assert found[("0000:b9:00.0", 74)].sympathetic_to == "Xid 62 on 0000:3e:00.0"
    assert found[("0000:3e:00.0", 62)].sympathetic_to is None
    (finding,) = [f for f in findings(list(found.values()), [], {}, "dmesg") if f.code == "xid.74"]
    assert "likely sympathetic to Xid 62 on 0000:3e:00.0" in finding.message
    assert finding.severity == Severity.CRITICAL  # marked, never played down (Xid 45 only)


def test_xid74_on_the_gpu_with_the_critical_xid_is_its_own_failure() -> None:
    found = groups(XID62.format(bus=GPU_A), XID74.format(bus=GPU_A))
    assert found[("0000:3e:00.0", 74)].sympathetic_to is None
    (finding,) = [f for f in findings(list(found.values()), [], {}, "dmesg") if f.code == "xid.74"]
    assert "sympathetic" not in finding.message


def test_xid74_is_sympathetic_to_critical_xids_only_and_never_to_another_xid74() -> None:
    alone = groups(XID74.format(bus=GPU_B))
    assert alone[("0000:b9:00.0", 74)].sympathetic_to is None
    beside_a_warning = groups(XID13.format(bus=GPU_A), XID74.format(bus=GPU_B))
    assert beside_a_warning[("0000:b9:00.0", 74)].sympathetic_to is None
    two_links = groups(XID74.format(bus=GPU_A), XID74.format(bus=GPU_B))
    assert [g.sympathetic_to for g in two_links.values()] == [None, None]


def test_xid45_is_sympathetic_to_another_xid_of_its_own_gpu_only() -> None:
    found = groups(XID62.format(bus=GPU_A), XID45.format(bus=GPU_A), XID45.format(bus=GPU_B))
    own, other = found[("0000:3e:00.0", 45)], found[("0000:b9:00.0", 45)]
    assert own.sympathetic_to == "Xid 62 on the same GPU"
    assert other.sympathetic_to is None
    messages = {f.message for f in findings(list(found.values()), [], {}, "dmesg")}
    assert sum("likely sympathetic to Xid 62 on the same GPU" in m for m in messages) == 1
