"""The one kernel-log pass routes each line: a handler with `feed_text` gets the lines its own
interest wants (as message and time), any other every candidate line (as a `KernelLine`),
and both see what they saw when every handler was fed every candidate line."""

from __future__ import annotations

from typing import Any

from sitscheck.checks.pcie_aer.check import KERNEL_LOG as AER
from sitscheck.checks.xid.check import KERNEL_LOG as XID
from sitscheck.contract.declarations import Anchor, KernelLogInterest
from sitscheck.kernlog.lines import KernelLine, iter_kernel_lines
from sitscheck.kernlog.scan import scan_lines


class Everything:
    """A plugin's handler without `feed_text`: it keeps every line it is given."""

    def __init__(self) -> None:
        self.lines: list[KernelLine] = []

    def feed(self, line: Any) -> None:
        self.lines.append(line)

    def finish(self) -> list[KernelLine]:
        return self.lines


PLUGIN = KernelLogInterest(anchors=(Anchor(b"usb"),), handler=f"{__name__}:Everything")
LOG = [
    "[    1.000000] usb 1-4: new high-speed USB device number 2",
    "[    2.000000] pcieport 0000:00:01.0: AER: Corrected error message received from 0000:00:06.0",
    "[    2.000001] nvidia 0000:00:06.0:    [ 0] RxErr                  (First)",
    "Sep 19 16:18:02 node kernel: NVRM: Xid (PCI:0000:00:06): 13, pid=1, name=a, Graphics",
    "[    3.000000] EXT4-fs (nvme0n1p2): re-mounted",
]


def test_a_handler_without_feed_text_gets_every_candidate_line() -> None:
    lines, results = scan_lines(LOG, {"pcie_aer": AER, "xid": XID, "plugin": PLUGIN})
    assert lines == len(LOG)
    # candidates: the lines some interest wants (the EXT4 line none does)
    assert results["plugin"] == list(iter_kernel_lines(LOG[:4]))
    assert results["pcie_aer"].count == 1 and results["xid"].count == 1
    (xid,) = results["xid"].storm.kept
    assert xid.time == "Sep 19 16:18:02" and xid.xid == 13


def test_the_own_routes_alone_read_the_same() -> None:
    _, alone = scan_lines(LOG, {"pcie_aer": AER, "xid": XID})
    _, with_plugin = scan_lines(LOG, {"pcie_aer": AER, "xid": XID, "plugin": PLUGIN})
    for name in ("pcie_aer", "xid"):
        assert alone[name].storm.facts(lambda e: e.to_fact()) == with_plugin[name].storm.facts(
            lambda e: e.to_fact()
        )
