"""Properties of the kernel-log line splitter and the AER / Xid parsers.

- no input crashes any of them;
- unrelated lines interleaved around or inside an AER report never change its events;
- the prefix form a line reaches the log in (plain dmesg, -T, -x, syslog, journald, kmsg, ...)
  changes nothing the parsers extract except `time`.
"""

from __future__ import annotations

import random
from unittest.mock import patch

import pytest
import sitscheck.kernlog.candidates as candidates
from fakes.kernel_lines import candidate_lines
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sitscheck.checks.pcie_aer.parse import AER_ANCHORS, HEAD_LINES, might_be_aer, parse_aer
from sitscheck.checks.xid.parse import XID_ANCHORS, might_be_xid, parse_xid
from sitscheck.kernlog.anchor import Anchor
from sitscheck.kernlog.lines import iter_kernel_lines, split_kernel_line, unwrap_lines

# Message bodies as the kernel prints them (no log-tool prefix).
AER_REPORTS: list[list[str]] = [
    [  # 6.x correctable, GPU endpoint below a root port
        "pcieport 0000:97:01.0: AER: Correctable error message received from 0000:98:00.0",
        "nvidia 0000:98:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, "
        "(Receiver ID)",
        "nvidia 0000:98:00.0:   device [10de:2330] error status/mask=00000041/0000e000",
        "nvidia 0000:98:00.0:    [ 0] RxErr                  (First)",
        "nvidia 0000:98:00.0:    [ 6] BadTLP",
    ],
    [  # 6.x multiple: root port and GPU blocks
        "pcieport 0000:97:01.0: AER: Multiple Correctable error message received from 0000:98:00.0",
        "pcieport 0000:97:01.0: PCIe Bus Error: severity=Correctable, type=Data Link Layer, "
        "(Transmitter ID)",
        "pcieport 0000:97:01.0:   device [8086:352a] error status/mask=00001100/00002000",
        "pcieport 0000:97:01.0:    [ 8] Rollover",
        "pcieport 0000:97:01.0:    [12] Timeout",
        "nvidia 0000:98:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, "
        "(Receiver ID)",
        "nvidia 0000:98:00.0:   device [10de:2330] error status/mask=00000001/0000e000",
        "nvidia 0000:98:00.0:    [ 0] RxErr",
    ],
    [  # 6.x non-fatal on an H200, TLP header with the AER: prefix
        "pcieport 0000:15:01.0: AER: Uncorrectable (Non-Fatal) error message received from "
        "0000:1b:00.0",
        "nvidia 0000:1b:00.0: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), "
        "type=Transaction Layer, (Requester ID)",
        "nvidia 0000:1b:00.0:   device [10de:2335] error status/mask=00100000/00400000",
        "nvidia 0000:1b:00.0:    [20] UnsupReq               (First)",
        "nvidia 0000:1b:00.0: AER:   TLP Header: 0x40000001 0x0000000f 0x9c000000 0x00000000",
    ],
    [  # 4.x id= form with long names
        "pcieport 0000:00:01.0: AER: Corrected error received: id=0008",
        "hpsa 0000:04:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
        "id=0400(Transmitter ID)",
        "hpsa 0000:04:00.0:   device [103c:323a] error status/mask=000011c1/00000000",
        "hpsa 0000:04:00.0:    [ 0] Receiver Error         (First)",
        "hpsa 0000:04:00.0:    [ 6] Bad TLP",
        "hpsa 0000:04:00.0:    [ 7] Bad DLLP",
        "hpsa 0000:04:00.0:    [ 8] RELAY_NUM Rollover",
        "hpsa 0000:04:00.0:    [12] Replay Timer Timeout",
    ],
    [  # 5.x fatal with AER: on every line
        "pcieport 0000:00:1c.5: AER: Uncorrected (Fatal) error received: 0000:00:1c.5",
        "pcieport 0000:00:1c.5: AER: PCIe Bus Error: severity=Uncorrected (Fatal), "
        "type=Transaction Layer, (Receiver ID)",
        "pcieport 0000:00:1c.5: AER:   device [8086:9d15] error status/mask=00040000/00000000",
        "pcieport 0000:00:1c.5: AER:    [18] MalfTLP                (First)",
    ],
    [  # firmware-first
        "{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 1",
        "{1}[Hardware Error]: event severity: recoverable",
        "{1}[Hardware Error]:  Error 0, type: recoverable",
        "{1}[Hardware Error]:   section_type: PCIe error",
        "{1}[Hardware Error]:   device_id: 0000:5e:00.0",
        "{1}[Hardware Error]:   vendor_id: 0x144d, device_id: 0xa808",
        "{1}[Hardware Error]:   aer_uncor_status: 0x00004000, aer_uncor_mask: 0x00000000",
    ],
    [  # header whose details were not found
        "pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0",
        "pcieport 0000:00:03.0: AER: can't find device of ID0018",
    ],
]

XID_BODIES: list[str] = [
    "NVRM: GPU at PCI:0000:91:00: GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b",
    "NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    "NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.",
    "NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double "
    "bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x7fdf0de80 "
    "partition 5, subpartition 1.",
    "NVRM: Xid (PCI:0000:07:00): 63, pid=1896, Row Remapper: New row marked for remapping, "
    "reset gpu to activate.",
    "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). "
    "RST: No, D-RST: No",
    "NVRM: Xid (PCI:0000:2d:00): 109, pid=619, name=(udev-worker), channel 0x00000001, "
    "errorString CTX SWITCH TIMEOUT, Info 0x4000",
    "NVRM: Xid (PCI:0000:2d:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 "
    "(GPU Reset Required)",
    "nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ "
    "interrupt",
    "NVRM: The NVIDIA GPU 0000:b3:00.0",
    "NVRM: (PCI ID: 10de:26b5) installed in this system has",
    "NVRM: fallen off the bus and is not responding to commands.",
    "NVRM:     RISC-V CSR State:",
]

# Lines that are not part of any AER report, some of them AER-ish on purpose.
UNRELATED: list[str] = [
    "nvme nvme0: I/O 258 (I/O Cmd) QID 4 timeout, aborting",
    "usb 1-4: new high-speed USB device number 3 using xhci_hcd",
    "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=a, Graphics Exception: ESR 0x5067b0=0x9",
    "mce: [Hardware Error]: Machine check events logged",
    "EDAC MC3: 1 CE memory read error on CPU_SrcID#1_MC#1_Chan#2_DIMM#0",
    "ahci 0000:01:00.0: AER: can't recover (no error_detected callback)",
    "pcieport 0000:00:00.0: AER: device recovery failed",
    "pcieport 0000:00:1c.0: AER: enabled with IRQ 122",
    "pcieport 0000:00:1c.0: AER: Root Port link has been reset (0)",
    "pcieport 0000:00:1d.0: broadcast error_detected message",
    "pcieport 0000:00:1d.0: AER: Device recovery successful",
    "[drm] [nvidia-drm] [GPU ID 0x00002d00] Loading driver",
    "  show_stack+0x52/0x5c",
    "kernel: [12345.678] eth0: link up",
    "",
]


def _dmesg(stamp: float) -> str:
    return f"[{stamp:12.6f}] "


_PREFIXES = [
    lambda n, t: "",
    lambda n, t: _dmesg(t),
    lambda n, t: f"[{t:12.6f}] [  T{n % 9999}] ",
    lambda n, t: "[Mon Aug  5 03:54:13 2024] ",
    lambda n, t: f"[  +{t % 1:.6f}] ",
    lambda n, t: "kern  :err   : " + _dmesg(t),
    lambda n, t: "Sep 19 16:18:02 gpu-07 kernel: ",
    lambda n, t: "Sep 19 16:18:02 gpu-07 kernel: " + _dmesg(t),
    lambda n, t: "фев 12 00:48:02 kernel: ",
    lambda n, t: "2024-09-19T16:18:02.123456+02:00 gpu-07 kernel: ",
    lambda n, t: f"[{t:12.6f}] gpu-07 kernel: ",
    lambda n, t: f"4,{n},{int(t * 1_000_000)},-;",
    lambda n, t: f"6,{n},{int(t * 1_000_000)},-,caller=T{n % 99};",
    lambda n, t: "kernel: ",
]


_KMSG_FORMS = frozenset({11, 12})


def _render(bodies: list[str], forms: list[int], stamps: list[float]) -> list[str]:
    """Each body behind the prefix form `forms` picks for it (cycled), kmsg with dictionary."""
    rendered: list[str] = []
    for index, body in enumerate(bodies):
        form = forms[index % len(forms)]
        rendered.append(_PREFIXES[form](index + 1, stamps[index % len(stamps)]) + body)
        if form in _KMSG_FORMS and body.startswith(("pcieport", "nvidia ", "hpsa")):
            rendered.extend([" SUBSYSTEM=pci", " DEVICE=+pci:" + body.split()[1].rstrip(":")])
    return rendered


def _without_time(facts: list[dict[str, object]]) -> list[dict[str, object]]:
    return [{key: value for key, value in fact.items() if key != "time"} for fact in facts]


def _aer(raw: list[str]) -> list[dict[str, object]]:
    return [event.to_fact() for event in parse_aer(iter_kernel_lines(raw))]


def _xid(raw: list[str]) -> list[dict[str, object]]:
    return [event.to_fact() for event in parse_xid(iter_kernel_lines(raw))]


_FRAGMENTS = [
    "AER: ",
    "PCIe Bus Error: severity=",
    "error status/mask=",
    "[ 0] ",
    "[14] ",
    "received",
    "received from 0000:00:",
    "{1}[Hardware Error]: ",
    "section_type: PCIe error",
    "device_id: ",
    "aer_status: 0x",
    "NVRM: ",
    "Xid (PCI:",
    "SXid (",
    "): ",
    "79, ",
    "pid=",
    "name=",
    "fallen off the bus",
    "The NVIDIA GPU ",
    "pcieport 0000:00:1c.0: ",
    "kernel: ",
    "[",
    "]",
    "\\x0a",
    "0000:00:1c.0",
    ":",
    ",",
    ";",
    "6,1,2,-;",
    " ",
    "\x00",
    "\t",
    "Sep 19 16:18:02 ",
    "can't find device of ID",
    "type=",
    "id=00e8",
    "0x",
    "ffff",
    "(First)",
    "\udcff",
]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.text(max_size=80), st.lists(st.sampled_from(_FRAGMENTS), max_size=12).map("".join)
        ),
        max_size=30,
    )
)
def test_no_input_crashes_anything(raw: list[str]) -> None:
    for line in raw:
        split_kernel_line(line)
        might_be_aer(line)
        might_be_xid(line)
    lines = list(iter_kernel_lines(raw))
    for event in parse_aer(lines):
        assert event.severity in ("corrected", "nonfatal", "fatal")
        event.to_fact()
    for xid_event in parse_xid(lines):
        xid_event.to_fact()


@settings(max_examples=200)
@given(
    report=st.sampled_from(AER_REPORTS),
    noise=st.lists(
        st.tuples(st.integers(min_value=0, max_value=20), st.sampled_from(UNRELATED)), max_size=12
    ),
)
def test_unrelated_lines_never_change_an_aer_report(
    report: list[str], noise: list[tuple[int, str]]
) -> None:
    mixed = list(report)
    for position, line in noise:
        mixed.insert(min(position, len(mixed)), line)
    assert _aer(mixed) == _aer(report)
    assert _aer([line for line in mixed if might_be_aer(line)]) == _aer(report)


@settings(max_examples=200)
@given(
    reports=st.lists(st.sampled_from(AER_REPORTS), min_size=1, max_size=3),
    forms=st.lists(st.integers(min_value=0, max_value=len(_PREFIXES) - 1), min_size=1),
    stamps=st.lists(st.floats(min_value=0, max_value=9_999_999, allow_nan=False), min_size=1),
)
def test_prefix_form_never_changes_aer_facts_but_time(
    reports: list[list[str]], forms: list[int], stamps: list[float]
) -> None:
    bodies = [line for report in reports for line in report]
    rendered = _render(bodies, forms, stamps)
    assert _without_time(_aer(rendered)) == _without_time(_aer(bodies))


@settings(max_examples=200)
@given(
    bodies=st.lists(st.sampled_from(XID_BODIES), max_size=20),
    forms=st.lists(st.integers(min_value=0, max_value=len(_PREFIXES) - 1), min_size=1),
    stamps=st.lists(st.floats(min_value=0, max_value=9_999_999, allow_nan=False), min_size=1),
)
def test_prefix_form_never_changes_xid_facts_but_time(
    bodies: list[str], forms: list[int], stamps: list[float]
) -> None:
    rendered = _render(bodies, forms, stamps)
    expected = _xid(bodies)
    assert _without_time(_xid(rendered)) == _without_time(expected)
    assert _xid([line for line in rendered if might_be_xid(line)]) == _xid(rendered)


@given(
    body=st.sampled_from([line for report in AER_REPORTS for line in report] + XID_BODIES),
    form=st.integers(min_value=0, max_value=len(_PREFIXES) - 1),
    stamp=st.floats(min_value=0, max_value=9_999_999, allow_nan=False),
)
def test_every_prefix_form_splits_back_to_the_body(body: str, form: int, stamp: float) -> None:
    split = split_kernel_line(_PREFIXES[form](7, stamp) + body)
    assert split is not None
    assert split.body == body


# ---------------------------------------------------------------------------------------------
# the candidate lines (`candidates`)


def _reference_candidates(data: bytes, anchors: list[Anchor], head_lines: int = 0) -> list[str]:
    """Line by line, over the whole log with its wrapped lines joined (`unwrap_lines`): every
    line with a needle, its before/after neighbours, and the first `head_lines` lines."""
    lines = data.decode("utf-8", "replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    lines = list(unwrap_lines(lines))
    wanted = set(range(head_lines))
    for index, line in enumerate(lines):
        for anchor in anchors:
            if anchor.needle.decode() in line:
                wanted.update(range(index - anchor.before, index + anchor.after + 1))
    return [lines[i] for i in sorted(wanted) if 0 <= i < len(lines)]


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    edges = sorted({min(max(cut, 0), len(data)) for cut in cuts})
    return [data[a:b] for a, b in zip([0, *edges], [*edges, len(data)], strict=True)]


@settings(max_examples=400)
@given(
    lines=st.lists(
        st.lists(st.sampled_from([b"x", b"AER", b"Xid", b"yy", b"NV", b"RM", b"", b"\xff"])).map(
            b" ".join
        ),
        max_size=40,
    ),
    newline_at_end=st.booleans(),
    windows=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 5)), min_size=3, max_size=3),
    head_lines=st.integers(0, 3),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=8),
)
def test_candidate_lines_match_a_line_by_line_reference(
    lines: list[bytes],
    newline_at_end: bool,
    windows: list[tuple[int, int]],
    head_lines: int,
    cuts: list[int],
) -> None:
    """Most of these lines continue the one above them (no bracket, no label): a needle may
    be split by a wrap ("NV" / "RM"), and the windows count whole lines."""
    data = b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    anchors = [
        Anchor(needle, before, after)
        for needle, (before, after) in zip((b"AER", b"Xid", b"NV RM"), windows, strict=True)
    ]
    got = list(candidate_lines(_cut(data, cuts), anchors, head_lines))
    assert got == _reference_candidates(data, anchors, head_lines)


# Bytes that are not UTF-8 or not ASCII, overlapping needles, needles cut by a chunk's end.
_BULK_PIECES = [
    *(b"AER", b"Xid", b"NVRM", b"[Hardware Error]", b"Xi", b"d", b"ER", b"A", b"RM", b"NV"),
    *(b"Ha", b"\xd8", b"\xdc", b"\xd8\x00\xdc", b"\x00", b"\xff", "ünï".encode(), b"x", b" "),
    *(b"\r", b"RMX", b"AEAER", b"NVRMX", b"ARMX", b"[1.0] ", b"a: "),
]
_BULK_ANCHORS = [
    Anchor(b"AER", after=2),
    Anchor(b"Xid"),
    Anchor(b"NVRM", before=1),
    Anchor(b"[Hardware Error]", after=1),
    Anchor(b"ARM"),
    Anchor(b"RMX"),  # overlaps NVRM and ARM ("NVRMX")
]


@pytest.mark.parametrize("automaton", [True, False])
@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.lists(st.sampled_from(_BULK_PIECES), max_size=12).map(b"".join), max_size=40),
    size=st.integers(min_value=1, max_value=400),
)
def test_candidate_lines_of_any_bytes_match_the_reference(
    automaton: bool, lines: list[bytes], size: int
) -> None:
    """Found through ahocorasick-rs, or (where no wheel installs) one `re` alternation."""
    data = b"\n".join(lines) + b"\n"
    chunks = [data[at : at + size] for at in range(0, len(data), size)]
    with patch.object(candidates, "AUTOMATON", automaton and candidates.AUTOMATON):
        got = list(candidate_lines(chunks, _BULK_ANCHORS))
    assert got == _reference_candidates(data, _BULK_ANCHORS)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.tuples(
            st.sampled_from([b"[1.0] ", b"6,1,2,-;", b" SUBSYSTEM=pci", b"", b" ", b"2000 "]),
            st.lists(st.sampled_from(_BULK_PIECES), max_size=6).map(b"".join),
        ).map(b"".join),
        max_size=60,
    ),
    size=st.integers(min_value=1, max_value=300),
)
# a needle only the wrap's two halves make ("NV" / "RM": "NVRM"), in a block that ends with a
# stamped line and holds no needle else
@example(lines=[b"[0.5] x", b"[1.0] a NV", b"RM b", b"[2.0] c"], size=300)
# a continuation that begins with a digit, though no /dev/kmsg record, ending a block
@example(lines=[b"[1.0] NVRM: status/mask=0000", b"2000", b"x"], size=34)
def test_stamped_and_kmsg_lines_give_the_references_candidates(
    lines: list[bytes], size: int
) -> None:
    """A block whose last line is of its own (a stamp, a /dev/kmsg record) and that holds no
    needle, not even across a line break, is made into text only where asked: the same lines."""
    data = b"\n".join(lines) + b"\n"
    chunks = [data[at : at + size] for at in range(0, len(data), size)]
    got = list(candidate_lines(chunks, _BULK_ANCHORS, head_lines=1))
    assert got == _reference_candidates(data, _BULK_ANCHORS, head_lines=1)


def _offsets(data: bytes, needle: bytes) -> list[int]:
    return [at for at in range(len(data)) if data.startswith(needle, at)]


def _big_log(lines: int, seed: int) -> bytes:
    """A log with needles (and their pairs alone) at every offset, some lines not ASCII."""
    rng = random.Random(seed)
    words = [b"usb", b"eth0:", b"AE", b"Xi", b"ER", b"RM", b"link", b"[ 12.5]", "й".encode()]
    needles = [anchor.needle for anchor in _BULK_ANCHORS]
    out = []
    for n in range(lines):
        row = b" ".join(rng.choice(words) for _ in range(rng.randrange(4, 16)))
        if n % 97 == 0:
            at = rng.randrange(len(row) + 1)
            row = row[:at] + rng.choice(needles) + row[at:]
        out.append(row)
    return b"\n".join(out) + b"\n"


@pytest.mark.parametrize("size", [64 * 1024, 300_001, 1 << 20])
def test_candidate_lines_at_a_real_chunk_size_match_the_reference(size: int) -> None:
    data = _big_log(25_000, seed=size)
    chunks = [data[at : at + size] for at in range(0, len(data), size)]
    got = list(candidate_lines(chunks, _BULK_ANCHORS))
    assert got == _reference_candidates(data, _BULK_ANCHORS)
    assert len(got) > 250


@st.composite
def _log_with_cuts(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """A log of random lines (multibyte UTF-8, invalid UTF-8, CRLF, needles anywhere, maybe no
    final line break) and cuts into chunks, many of them inside a needle or next to one."""
    pieces = [*_BULK_PIECES, "журнал".encode(), "日本".encode(), b"\r\n", b"\n", b"\xe2\x82"]
    data = draw(st.lists(st.sampled_from(pieces), max_size=120).map(b"".join))
    needles = [anchor.needle for anchor in _BULK_ANCHORS]
    near = [
        at + shift for n in needles for at in _offsets(data, n) for shift in range(-1, len(n) + 1)
    ]
    cuts = draw(st.lists(st.sampled_from(near) if near else st.just(0), max_size=6))
    cuts += draw(st.lists(st.integers(0, max(len(data), 1)), max_size=4))
    return data, cuts


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=_log_with_cuts(), head_lines=st.integers(0, 3))
def test_candidate_lines_are_the_naive_filters_for_any_log_cut_anywhere(
    log: tuple[bytes, list[int]], head_lines: int
) -> None:
    data, cuts = log
    got = list(candidate_lines(_cut(data, cuts), _BULK_ANCHORS, head_lines))
    assert got == _reference_candidates(data, _BULK_ANCHORS, head_lines)


@settings(max_examples=150)
@given(
    reports=st.lists(st.sampled_from(AER_REPORTS), min_size=1, max_size=4),
    xids=st.lists(st.sampled_from(XID_BODIES), max_size=10),
    noise=st.lists(
        st.tuples(st.integers(min_value=0, max_value=60), st.sampled_from(UNRELATED)), max_size=20
    ),
    forms=st.lists(st.integers(min_value=0, max_value=len(_PREFIXES) - 1), min_size=1),
    size=st.integers(min_value=1, max_value=4096),
    cut=st.integers(min_value=0, max_value=3),
)
# a call-trace line, with no prefix, below a stamped Xid line
@example(
    reports=[AER_REPORTS[0]],
    xids=[XID_BODIES[1]],
    noise=[(60, "  show_stack+0x52/0x5c")],
    forms=[1, 1, 1, 1, 1, 1, 0],
    size=4096,
    cut=0,
)
def test_candidate_lines_give_the_parsers_what_the_line_filters_give(
    reports: list[list[str]],
    xids: list[str],
    noise: list[tuple[int, str]],
    forms: list[int],
    size: int,
    cut: int,
) -> None:
    """Each check's candidate lines (its anchors', a log in chunks of any size) parse to what
    every line its test accepts parses to: in a log that mixes stamped and unstamped lines,
    no line of its own (a call-trace line) is joined to the one above it as a wrap."""
    # the first report may have lost its first lines to the start of the log
    bodies = [line for report in reports for line in report][cut:] + xids
    for position, line in noise:
        bodies.insert(min(position, len(bodies)), line)
    raw = _render(bodies, forms, [1234.5])
    data = "".join(line + "\n" for line in raw).encode()
    chunks = [data[at : at + size] for at in range(0, len(data), size)]
    aer = list(iter_kernel_lines(candidate_lines(chunks, AER_ANCHORS, HEAD_LINES)))
    xid = list(iter_kernel_lines(candidate_lines(chunks, XID_ANCHORS)))
    assert parse_aer(aer) == parse_aer(list(iter_kernel_lines(filter(might_be_aer, raw))))
    assert [e.to_fact() for e in parse_xid(xid)] == [
        e.to_fact() for e in parse_xid(iter_kernel_lines(filter(might_be_xid, raw)))
    ]
