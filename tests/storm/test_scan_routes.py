"""The one kernel-log pass feeds each handler (`feed(text, time)`) the lines its own interest
wants, in log order: those near its anchors that hold a word it `wants`. What other checks
declare changes nothing of it."""

from __future__ import annotations

from sitscheck.checks.pcie_aer.check import KERNEL_LOG as AER
from sitscheck.checks.xid.check import KERNEL_LOG as XID
from sitscheck.contract import Anchor, KernelLogInterest
from sitscheck.kernlog.lines import iter_kernel_lines
from sitscheck.kernlog.scan import scan_lines

TEXTS = "fakes.kernel_lines:Seen"  # keeps every line's message and time
PLUGIN = KernelLogInterest(anchors=(Anchor(b"usb", after=1),), handler=TEXTS)
LOG = [
    "[    1.000000] usb 1-4: new high-speed USB device number 2",
    "[    1.500000] usb 1-4: New USB device found, idVendor=0bda",
    "[    2.000000] pcieport 0000:00:01.0: AER: Corrected error message received from 0000:00:06.0",
    "[    2.000001] nvidia 0000:00:06.0:    [ 0] RxErr                  (First)",
    "Sep 19 16:18:02 node kernel: NVRM: Xid (PCI:0000:00:06): 13, pid=1, name=a, Graphics",
    "[    3.000000] EXT4-fs (nvme0n1p2): re-mounted",
]


def _pairs(lines: list[str]) -> list[tuple[str, str | None]]:
    return [(line.body, line.time) for line in iter_kernel_lines(lines)]


def test_a_handler_is_fed_the_message_and_time_of_each_line_its_anchors_want() -> None:
    """Without `wants`, every line near its anchors: the lines holding "usb" and the
    one after each (the AER header after the second), none of the other checks' lines."""
    lines, results = scan_lines(LOG, {"pcie_aer": AER, "xid": XID, "plugin": PLUGIN})
    assert lines == len(LOG)
    assert results["plugin"] == _pairs(LOG[:3])
    assert results["pcie_aer"].count == 1 and results["xid"].count == 1
    (xid,) = results["xid"].storm.kept
    assert xid.time == "Sep 19 16:18:02" and xid.xid == 13


COUNTED = KernelLogInterest(anchors=(Anchor(b"fault", after=1),), handler=TEXTS, wants=(b"gpu",))


def test_of_the_lines_near_its_anchors_those_holding_a_word_it_wants_alone() -> None:
    log = [
        "[ 1.0] gpu 0: fault",
        "[ 2.0] gpu 0: reset",  # after a fault, holds the word: wanted
        "[ 3.0] gpu 1: ok",  # holds the word, far from any fault: not wanted
        "[ 4.0] disk: fault",  # an anchor's line without the word: not wanted
        "Sep 19 16:18:02 gpu-node kernel: disk 3: after it",  # the word in the raw line: wanted
    ]
    _, results = scan_lines(log, {"counted": COUNTED})
    assert results["counted"] == [
        ("gpu 0: fault", "1.0"),
        ("gpu 0: reset", "2.0"),
        ("disk 3: after it", "Sep 19 16:18:02"),
    ]


def test_what_other_checks_declare_changes_nothing_a_check_is_fed() -> None:
    """A check's lines are its own interest's: the same alone as beside the others (a line
    another check's window holds, such as a bare "fallen off the bus" message after an AER
    header, is not the xid check's, whose anchors are "Xid" and "NVRM")."""
    log = [*LOG[:4], "[    2.000002] nvidia 0000:00:06.0: GPU has fallen off the bus.", *LOG[4:]]
    together = {"pcie_aer": AER, "xid": XID, "plugin": PLUGIN, "counted": COUNTED}
    _, all_results = scan_lines(log, together)
    for name, interest in together.items():
        _, alone = scan_lines(log, {name: interest})
        mine, theirs = alone[name], all_results[name]
        if hasattr(mine, "storm"):
            mine, theirs = (r.storm.facts(lambda e: e.to_fact()) for r in (mine, theirs))
        assert mine == theirs, name
    assert all_results["xid"].count == 1  # the Xid line alone
