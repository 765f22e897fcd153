"""The one kernel-log pass routes each line: a handler with `feed_text` gets the lines its own
interest wants (as message and time), any other every candidate line (as a `KernelLine`),
and both see what they saw when every handler was fed every candidate line."""

from __future__ import annotations

from typing import Any

from sitscheck.checks.pcie_aer.check import KERNEL_LOG as AER
from sitscheck.checks.xid.check import KERNEL_LOG as XID
from sitscheck.contract import Anchor, KernelLogInterest
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


class Texts:
    """A handler with `feed_text`: it keeps the (message, time) pairs it is given."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, str | None]] = []

    def feed(self, line: Any) -> None:
        self.feed_text(line.body, line.time)

    def feed_text(self, body: str, time: str | None) -> None:
        self.texts.append((body, time))

    def finish(self) -> list[tuple[str, str | None]]:
        return self.texts


ASKED: list[str] = []


def wants_gpu(raw: str) -> bool:
    """The test of `COUNTED`: records each line it is asked of."""
    ASKED.append(raw)
    return "gpu" in raw


COUNTED = KernelLogInterest(
    anchors=(Anchor(b"gpu"),), handler=f"{__name__}:Texts", wants=f"{__name__}:wants_gpu"
)


def storm_of(messages: list[str], repeat: int) -> list[str]:
    return [
        f"[{n * len(messages) + m:5d}.{n:06d}] {message}"
        for n in range(repeat)
        for m, message in enumerate(messages)
    ]


def test_a_storm_is_routed_by_its_messages_each_tested_once() -> None:
    messages = ["gpu 0: fault", "disk: ok", "gpu 1: fault", "\tgpu   2: raw tab", ""]
    log = storm_of(messages, 50)
    log.insert(7, "Sep 19 16:18:02 node kernel: gpu 3: syslog stamp")  # no plain stamp
    log.insert(9, "[  12.5] gpu\x00 nul")  # split as a whole line, never by the stamp alone
    ASKED.clear()
    _, results = scan_lines(log, {"counted": COUNTED})
    expected = [(line.body, line.time) for line in iter_kernel_lines(log) if "gpu" in line.body]
    assert results["counted"] == expected
    # each distinct message after a plain stamp once, each other line each time
    stamped = {line.split("] ", 1)[1] for line in log if line[0] == "[" and "\x00" not in line}
    assert len(ASKED) == len(stamped) + 2


def test_the_remembered_messages_are_bounded() -> None:
    from sitscheck.kernlog import scan

    distinct = [f"gpu {n}: fault" for n in range(scan._MAX_PLANS + 10)]
    log = storm_of(distinct, 2)
    ASKED.clear()
    _, results = scan_lines(log, {"counted": COUNTED})
    assert [body for body, _ in results["counted"]] == distinct * 2
    assert len(ASKED) > len(distinct)  # forgotten when full, asked again: memory stays bounded


def test_a_storm_line_two_handlers_want_reaches_both_in_order() -> None:
    """Lines with a plain stamp that two `feed_text` handlers want (and one only one wants):
    each handler gets each of its lines, with its time, in log order."""
    both = KernelLogInterest(anchors=(Anchor(b"gpu"),), handler=f"{__name__}:Texts")
    log = storm_of(["gpu 0: fault", "gpu 1: xid", "disk: ok"], 30)
    _, results = scan_lines(log, {"counted": COUNTED, "both": both, "xid": XID})
    expected = [(line.body, line.time) for line in iter_kernel_lines(log) if "gpu" in line.body]
    assert results["counted"] == expected and results["both"] == expected
    assert len(expected) == 60
