"""Mixed error storms for the differential and storm tests: AER reports of every kind this
parser reads (whole native reports, uncorrectable ones, DPC containments, reports whose header
or details were cut off, firmware-first blocks) and Xid/SXid reports, interleaved with other
kernel lines, on the recorded 2×H200 bundle's GPUs (0000:00:06.0, 0000:00:07.0), their port
and a device on no GPU's path. Deterministic: a seeded choice of report per step.

The report lines are those of the shared corpus's real samples (pci_print_aer, dpc.c, GHES,
the NVIDIA driver's Xid/SXid prints), with the bus ids and times changed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from sitscheck.checks.pcie_aer.parse import AerLines
from sitscheck.checks.pcie_aer.tally import AerTally
from sitscheck.kernlog.lines import iter_kernel_lines

Stamp = Callable[[int], str]  # step -> the line's prefix (time, host, facility)

GPU0, GPU1, PORT, STRAY = "0000:00:06.0", "0000:00:07.0", "0000:00:01.0", "0000:19:00.0"
DEVICES = (GPU0, GPU1, STRAY)
FILLER = (
    "EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro",
    'audit: type=1400 audit(1700000000.123:42): apparmor="STATUS" operation="profile_load"',
    "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
    "NVRM: GPU at PCI:0000:00:06: GPU-2f1a0c3b-0000-0000-0000-000000000000",
)


def _corrected(d: str, multiple: bool = False) -> list[str]:
    many = "Multiple " if multiple else ""
    return [
        f"pcieport {PORT}: AER: {many}Corrected error message received from {d}",
        f"nvidia {d}: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)",
        f"nvidia {d}:   device [10de:2335] error status/mask=00000001/0000e000",
        f"nvidia {d}:    [ 0] RxErr                  (First)",
    ]


def _badtlp(d: str) -> list[str]:
    return [
        f"pcieport {PORT}: AER: Corrected error received: {d}",
        f"nvidia {d}: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)",
        f"nvidia {d}:   device [10de:2335] error status/mask=000000c0/00002000",
        f"nvidia {d}:    [ 6] BadTLP                ",
        f"nvidia {d}:    [ 7] BadDLLP               ",
    ]


def _nonfatal(d: str) -> list[str]:
    return [
        f"pcieport {PORT}: AER: Uncorrected (Non-Fatal) error received: {d}",
        f"nvidia {d}: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer,"
        " (Requester ID)",
        f"nvidia {d}:   device [10de:2335] error status/mask=00004000/00000000",
        f"nvidia {d}:    [14] CmpltTO                (First)",
    ]


def _dpc_fatal(d: str) -> list[str]:
    return [
        f"pcieport {PORT}: DPC: containment event, status:0x000d, ERR_FATAL received from {d}",
        f"pcieport {PORT}: AER: broadcast error_detected message",
        f"pcieport {PORT}: pciehp: Slot(1): Link Down",
    ]


def _dpc_unmasked(d: str) -> list[str]:  # no detail block: a severity the log must decide
    return [
        f"pcieport {PORT}: DPC: containment event, status:0x1f01 source:0x0000",
        f"pcieport {PORT}: DPC: unmasked uncorrectable error detected",
    ]


def _cut_header(d: str) -> list[str]:  # the details lost: a header alone
    return [f"pcieport {PORT}: AER: Corrected error message received from {d}"]


def _cut_details(d: str) -> list[str]:  # the header and severity line lost: status alone
    return [f"nvidia {d}:   device [10de:2335] error status/mask=00000040/00000000"]


def _cut_bits(d: str) -> list[str]:  # uncorrectable bit names alone: fatality unknown
    return [f"nvidia {d}:    [18] MalfTLP                (First)"]


def _ghes(d: str) -> list[str]:
    return [
        "{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 0",
        "{1}[Hardware Error]: It has been corrected by h/w and requires no further action",
        "{1}[Hardware Error]: event severity: corrected",
        "{1}[Hardware Error]:  Error 0, type: corrected",
        "{1}[Hardware Error]:   section_type: PCIe error",
        "{1}[Hardware Error]:   port_type: 0, PCIe end point",
        "{1}[Hardware Error]:   version: 3.0",
        f"{{1}}[Hardware Error]:   device_id: {d}",
        "{1}[Hardware Error]:   vendor_id: 0x10de, device_id: 0x2335",
        f"nvidia {d}: AER: aer_status: 0x00000001, aer_mask: 0x00000000",
        f"nvidia {d}:    [ 0] RxErr                  (First)",
        f"nvidia {d}: AER: aer_layer=Physical Layer, aer_agent=Receiver ID",
    ]


def _xid(code: int, rest: str) -> Callable[[str], list[str]]:
    def lines(d: str) -> list[str]:
        return [f"NVRM: Xid (PCI:{d[:-2]}): {code}, {rest}"]

    return lines


def _sxid(d: str) -> list[str]:
    return [
        "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 22013, Non-fatal, Link 44 MINION Link DLREQ"
        " interrupt",
        "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 22013, Severity 0 Engine instance 44 Sub-"
        "engine instance 00",
        "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 22013, Data {0x00000000, 0x00000000}",
    ]


def _fallen(d: str) -> list[str]:
    return [
        f"NVRM: Xid (PCI:{d[:-2]}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the"
        " bus.",
        f"NVRM: GPU {d}: GPU has fallen off the bus.",
    ]


REPORTS: tuple[tuple[int, Callable[[str], list[str]]], ...] = (  # (weight, lines of device)
    (40, _corrected),
    (6, lambda d: _corrected(d, multiple=True)),
    (8, _badtlp),
    (4, _nonfatal),
    (1, _dpc_fatal),
    (1, _dpc_unmasked),
    (2, _cut_header),
    (2, _cut_details),
    (1, _cut_bits),
    (3, _ghes),
    (10, _xid(13, "pid=4242, name=python3, Graphics SM Warp Exception on (GPC 2, TPC 1, SM 0)")),
    (3, _xid(31, "pid=4242, name=python3, Ch 00000008, intr 10000000. MMU Fault")),
    (3, _xid(45, "pid=4242, name=python3, Ch 00000008")),
    (2, _xid(154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")),
    (1, _xid(154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)")),
    (2, _xid(74, "pid=4242, name=python3, NVLink: fatal error detected on link 4")),
    (1, _xid(48, "pid=4242, name=python3, An uncorrectable double bit error (DBE) occurred")),
    (2, _sxid),
    (1, _fallen),
)


def bracket(step: int) -> str:
    return f"[{5.0 + step * 0.0375:12.6f}] "


def syslog(step: int) -> str:  # no year: a span the corrected rate cannot read
    minute, second = divmod(step // 4, 60)
    return f"Sep 19 {16 + minute // 60:02d}:{minute % 60:02d}:{second:02d} node-7 kernel: "


def kmsg(step: int) -> str:
    return f"3,{step},{5_000_000_000 + step * 37_500},-;"


def relative(step: int) -> str:  # `dmesg -H`'s deltas: no rate at all
    return "[  +0.037500] "


STAMPS: dict[str, Stamp] = {
    "bracket": bracket,
    "syslog": syslog,
    "kmsg": kmsg,
    "relative": relative,
}


def storm(path: Path, reports: int, stamp: Stamp = bracket, seed: int = 3) -> None:
    """`reports` reports (about 80% AER, the rest Xid/SXid), two filler lines after each."""
    rng = random.Random(seed)
    weights = [w for w, _ in REPORTS]
    step = 0
    with path.open("w", encoding="utf-8") as out:
        for _ in range(reports):
            _, make = rng.choices(REPORTS, weights)[0]
            for line in [*make(rng.choice(DEVICES)), rng.choice(FILLER), rng.choice(FILLER)]:
                out.write(stamp(step) + line + "\n")
                step += 1


# -- random mixes of the report kinds above (the AER differential's inputs: `aer_recorded.py`)

AER_REPORTS = [make for weight, make in REPORTS if "Xid" not in "".join(make(DEVICES[0]))]
OTHER_PORT = "0000:00:02.0"
MIX_FILLER = "EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro"


def report(rng: random.Random) -> list[str]:
    """One AER report of a random kind and device, now and then logged by another port, cut
    off, with a detail line printed twice, or with a second device's block under its header."""
    lines = rng.choice(AER_REPORTS)(rng.choice(DEVICES))
    shape = rng.random()
    if shape < 0.1:  # another port logged it
        lines = [line.replace(PORT, OTHER_PORT) for line in lines]
    elif shape < 0.2:  # cut off at a random line
        lines = lines[: rng.randint(1, len(lines))]
    elif shape < 0.3 and len(lines) > 1:  # a detail line printed twice
        at = rng.randrange(1, len(lines))
        lines = [*lines[: at + 1], lines[at], *lines[at + 1 :]]
    elif shape < 0.4:  # a second device's block under the same header
        other = rng.choice(DEVICES)
        lines = [*lines, *(line for line in AER_REPORTS[0](other)[1:])]
    return lines


def mixed_log(seed: int) -> list[str]:
    """Up to 400 lines of random reports (`report`), other lines between, and now and then
    two reports' lines interleaved."""
    rng = random.Random(seed)
    stamp = rng.choice((bracket, syslog, kmsg))
    lines: list[str] = []
    while len(lines) < rng.randint(1, 400):
        lines += report(rng)
        if rng.random() < 0.3:
            lines.append(MIX_FILLER)
    if rng.random() < 0.3:  # two reports' lines interleaved
        at = rng.randrange(len(lines))
        lines[at:at] = report(rng)[::-1]
    return [stamp(step) + line for step, line in enumerate(lines)]


def storm_log(seed: int) -> list[str]:
    """Past 1,000 events: a few report kinds on a few devices over and over (a storm), now
    and then another kind, a cut-off or repeated line, or noise."""
    rng = random.Random(seed)
    stamp = rng.choice((bracket, bracket, syslog, kmsg, relative))
    kinds = [(rng.choice(AER_REPORTS), rng.choice(DEVICES)) for _ in range(rng.randint(1, 4))]
    lines: list[str] = []
    for _ in range(rng.randint(1500, 2500)):
        if rng.random() < 0.03:
            lines += report(rng)
        else:
            make, device = rng.choice(kinds)
            lines += make(device)
    return [stamp(step) + line for step, line in enumerate(lines)]


# -- corrected storms on the two GPUs (the streaming tests)

CORRECTED = (
    "[{t:.6f}] pcieport 0000:00:01.0: AER: Corrected error message received from {d}",
    "[{t:.6f}] nvidia {d}: PCIe Bus Error: severity=Correctable, type=Physical Layer,"
    " (Receiver ID)",
    "[{t:.6f}] nvidia {d}:   device [10de:2335] error status/mask=00000001/0000e000",
    "[{t:.6f}] nvidia {d}:    [ 0] RxErr                  (First)",
)
FATAL = (
    "[{t:.6f}] pcieport 0000:00:01.0: DPC: containment event, status:0x000d, ERR_FATAL"
    " received from {d}"
)


def corrected_storm(reports: int, fatal_every: int = 0) -> list[str]:
    """`reports` corrected reports on two GPUs, a fatal containment every `fatal_every`."""
    lines: list[str] = []
    for n in range(reports):
        device = GPU0 if n % 2 else GPU1
        if fatal_every and n % fatal_every == fatal_every - 1:
            lines.append(FATAL.format(t=n * 0.5, d=device))
        else:
            lines.extend(row.format(t=n * 0.5, d=device) for row in CORRECTED)
    return lines


def tally_of(lines: list[str], handler_type: type[AerLines] = AerLines) -> AerTally:
    """The AER tally of raw log lines, read by `handler_type` (the parser, or a variant)."""
    handler = handler_type()
    for line in iter_kernel_lines(lines):
        handler.feed(line.body, line.time)
    tally = handler.finish()
    assert tally is not None
    return tally
