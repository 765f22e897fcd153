"""sitscheck.kernlog.lines: every prefix form a kernel message reaches a log in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.kernel_lines import candidate_lines
from hypothesis import given
from hypothesis import strategies as st
from sitscheck.kernlog.anchor import Anchor
from sitscheck.kernlog.lines import (
    MAX_JOINED,
    KernelLine,
    continues,
    iter_kernel_lines,
    kernel_messages,
    split_kernel_line,
    unwrap_lines,
)

MSG = "pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0"


@pytest.mark.parametrize(
    ("raw", "time", "caller"),
    [
        # plain dmesg, dmesg -T (day padding), dmesg -H (first line of a minute, relative)
        (f"[  123.456789] {MSG}", "123.456789", None),
        (f"[Mon Aug  5 03:54:13 2024] {MSG}", "Mon Aug  5 03:54:13 2024", None),
        (f"[Aug30 11:11] {MSG}", "Aug30 11:11", None),
        (f"[  +0.000316] {MSG}", "+0.000316", None),
        # dmesg -T in another locale
        (f"[Пт авг 30 11:43:09 2024] {MSG}", "Пт авг 30 11:43:09 2024", None),
        # dmesg -x facility/level, with both stamp kinds
        (f"kern  :err   : [  123.456789] {MSG}", "123.456789", None),
        (f"kern  :warn  : [Fri Aug 30 11:43:09 2024] {MSG}", "Fri Aug 30 11:43:09 2024", None),
        # dmesg --time-format=iso
        (f"2024-08-30T11:43:09,123456+00:00 {MSG}", "2024-08-30T11:43:09,123456+00:00", None),
        # printk caller ids after and before the stamp, and the console's glued form
        (f"[  123.456789] [  T291] {MSG}", "123.456789", "T291"),
        (f"[   C3] [  123.456789] {MSG}", "123.456789", "C3"),
        (f"[    0.000000][    T1] {MSG}", "0.000000", "T1"),
        # syslog with and without the kernel's own stamp (the kernel's own one wins)
        (f"Sep 19 16:18:02 host kernel: [68183.615790] {MSG}", "68183.615790", None),
        (f"Sep 19 16:18:02 host kernel: {MSG}", "Sep 19 16:18:02", None),
        (f"Sep  9 16:18:02 host kernel[0]: {MSG}", "Sep  9 16:18:02", None),
        # journald: short, --no-hostname, short-precise, short-iso, short-full, monotonic
        (f"фев 12 00:48:02 kernel: {MSG}", "фев 12 00:48:02", None),
        (f"Mai 17 13:10:25 ANDROMEDA kernel: {MSG}", "Mai 17 13:10:25", None),
        (f"Mar 29 15:38:59.123456 gpu-07 kernel: {MSG}", "Mar 29 15:38:59.123456", None),
        (f"2024-09-19T16:18:02+0200 gpu-07 kernel: {MSG}", "2024-09-19T16:18:02+0200", None),
        (
            f"2024-09-19T16:18:02.123456+02:00 gpu-07 kernel: {MSG}",
            "2024-09-19T16:18:02.123456+02:00",
            None,
        ),
        (
            f"Thu 2024-09-19 16:18:02 CEST gpu-07 kernel: {MSG}",
            "Thu 2024-09-19 16:18:02 CEST",
            None,
        ),
        (f"[  123.456789] gpu-07 kernel: {MSG}", "123.456789", None),
        # bare tag, console log level
        (f"kernel: {MSG}", None, None),
        (f"<4>[  123.456789] {MSG}", "123.456789", None),
        # no prefix at all
        (MSG, None, None),
    ],
)
def test_every_prefix_form_gives_the_same_body(
    raw: str, time: str | None, caller: str | None
) -> None:
    assert split_kernel_line(raw) == KernelLine(body=MSG, time=time, caller=caller)


def test_kmsg_record_gives_seq_time_and_caller() -> None:
    assert split_kernel_line(f"4,2871,512100200,-;{MSG}") == KernelLine(
        body=MSG, time="512.100200", seq=2871
    )
    assert split_kernel_line(f"3,2872,512100215,c,caller=T12;{MSG}") == KernelLine(
        body=MSG, time="512.100215", seq=2872, caller="T12"
    )


def test_kmsg_dictionary_lines_are_dropped() -> None:
    raw = [
        f"4,2871,512100200,-;{MSG}\n",
        " SUBSYSTEM=pci\n",
        " DEVICE=+pci:0000:00:01.0\n",
    ]
    assert [line.body for line in iter_kernel_lines(raw)] == [MSG]


def test_kmsg_escaped_newlines_become_separate_lines_of_one_record() -> None:
    raw = (
        "3,9041,1843308145,-;NVRM: The NVIDIA GPU 0000:b3:00.0\\x0a"
        "NVRM: (PCI ID: 10de:26b5) installed in this system has\\x0a"
        "NVRM: fallen off the bus and is not responding to commands.\\x0a"
    )
    lines = list(iter_kernel_lines([raw]))
    assert [line.body for line in lines] == [
        "NVRM: The NVIDIA GPU 0000:b3:00.0",
        "NVRM: (PCI ID: 10de:26b5) installed in this system has",
        "NVRM: fallen off the bus and is not responding to commands.",
    ]
    assert {(line.seq, line.time) for line in lines} == {(9041, "1843.308145")}


def test_dmesg_continuation_lines_lose_their_indent() -> None:
    raw = "               NVRM: (PCI ID: 10de:26b5) installed in this system has"
    assert split_kernel_line(raw) == KernelLine(
        body="NVRM: (PCI ID: 10de:26b5) installed in this system has"
    )


def test_message_brackets_are_not_taken_for_prefixes() -> None:
    raw = "Feb 20 01:34:20 localhost kernel: [drm] [nvidia-drm] [GPU ID 0x00002d00] failed"
    assert split_kernel_line(raw) == KernelLine(
        body="[drm] [nvidia-drm] [GPU ID 0x00002d00] failed", time="Feb 20 01:34:20"
    )
    assert split_kernel_line("[11219.196524] {1}[Hardware Error]: event severity: fatal") == (
        KernelLine(body="{1}[Hardware Error]: event severity: fatal", time="11219.196524")
    )


def test_leading_space_of_the_message_itself_is_kept_after_a_prefix() -> None:
    raw = "[Sun Feb 23 16:24:18 2025]  show_stack+0x52/0x5c"
    assert split_kernel_line(raw) == KernelLine(
        body=" show_stack+0x52/0x5c", time="Sun Feb 23 16:24:18 2025"
    )


def test_non_kernel_syslog_lines_are_left_whole() -> None:
    raw = "Sep 19 16:18:02 host systemd[1]: Started Session 4."
    assert split_kernel_line(raw) == KernelLine(body=raw)


def test_iter_strips_newlines_and_nul_bytes_and_tolerates_garbage() -> None:
    raw = [
        f"[  1.000000] {MSG}\r\n",
        "\x00\x00\x00[  2.000000] NVRM: Xid\x00\n",
        "",
        "[",
        "[]",
        "\udcff\x01 ::: [ ] kernel:",
        "kernel:",
    ]
    lines = list(iter_kernel_lines(raw))
    assert lines[0] == KernelLine(body=MSG, time="1.000000")
    assert lines[1] == KernelLine(body="NVRM: Xid", time="2.000000")
    assert [line.body for line in lines[2:]] == ["", "[", "[]", "\udcff\x01 ::: [ ] kernel:", ""]


def test_iter_is_lazy() -> None:
    def endless() -> Iterator[str]:
        count = 0
        while True:
            count += 1
            yield f"[{count}.000000] line {count}"

    stream = iter_kernel_lines(endless())
    assert next(stream).body == "line 1"
    assert next(stream).time == "2.000000"


# ---------------------------------------------------------------------------------------------
# kernel_messages: the lines of a block at once, as split_kernel_line splits each


def one_at_a_time(lines: list[str]) -> list[tuple[str, str | None]]:
    """The reference: each line split by itself (`split_kernel_line`, through the iterator)."""
    return [(line.body, line.time) for line in iter_kernel_lines(lines)]


CORPUS = Path(__file__).resolve().parents[1] / "corpus"
# lines whose lookaheads could read on into the next line once joined, and every prefix form
TRICKY = [
    "[  1.000000] gpu-07",
    "kernel: the next line begins like a tag",
    "[  2.000000] word",
    "[  7.000000] gpu-07 kernel: journald monotonic",
    "12 16:18:02 host kernel: x",
    "[  3.000000] nvidia 0000:b3:00.0: the device form",
    "[  4.000000] ",
    "[  5.000000]",
    "",
    "[  6.000000] [  T291] with a caller",
    "[  +0.000316] relative",
    "4,2871,512100200,-;NVRM: a\\x0aNVRM: b",
    " SUBSYSTEM=pci",
    "Sep 19 16:18:02 host kernel: [68183.615790] pcieport 0000:00:1d.0: AER: x",
]


@pytest.mark.parametrize(
    "path", sorted(CORPUS.glob("*/*.txt")), ids=lambda path: f"{path.parent.name}/{path.stem}"
)
def test_kernel_messages_split_a_corpus_log_as_each_line_alone(path: Path) -> None:
    lines = path.read_text(errors="replace").split("\n")
    assert kernel_messages(lines) == one_at_a_time(lines)


@given(st.lists(st.sampled_from(TRICKY) | st.text(alphabet="[]0123456789.+ :kernlTab")))
def test_kernel_messages_split_any_lines_as_each_line_alone(lines: list[str]) -> None:
    assert kernel_messages(lines) == one_at_a_time(lines)


@given(st.lists(st.sampled_from(TRICKY)), st.sampled_from(["\r", "\x00", "\r\x00"]))
def test_a_carriage_return_or_nul_anywhere_changes_nothing(lines: list[str], odd: str) -> None:
    """Where a line holds one, every line is split alone: still as the splitter splits it."""
    with_odd = [*lines, f"[  8.000000] nvidia 0000:b3:00.0: {odd}odd{odd}"]
    assert kernel_messages(with_odd) == one_at_a_time(with_odd)


def test_kernel_messages_take_the_plain_stamp_and_leave_the_rest_to_the_splitter() -> None:
    assert kernel_messages(["[  1.000000] gpu-07", "kernel: x", "[  2.0] a: b", ""]) == [
        ("gpu-07", "1.000000"),
        ("x", None),
        ("a: b", "2.0"),
        ("", None),
    ]
    assert kernel_messages([]) == []


# ---------------------------------------------------------------------------------------------
# candidate_lines: the lines the anchors want


def _chunked(data: bytes, size: int) -> list[bytes]:
    return [data[at : at + size] for at in range(0, len(data), size)]


LOG = b"".join(
    f"[{n:6d}.000000] {text}\n".encode()
    for n, text in enumerate(
        [
            "usb 1-4: new device",  # 0
            "NVRM: The NVIDIA GPU 0000:b3:00.0",  # 1
            "NVRM: (PCI ID: 10de:26b5) installed in this system has",  # 2
            "NVRM: fallen off the bus and is not responding to commands.",  # 3
            "eth0: link up",  # 4
            "pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0",  # 5
            "pcieport 0000:00:03.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer",  # 6
            "pcieport 0000:00:03.0:   device [8086:6f08] error status/mask=00001000/00002000",  # 7
            "pcieport 0000:00:03.0:    [12] Timeout",  # 8
            "systemd-journald[812]: rotating",  # 9
            "ахалай-махалай: ünïcödé",  # 10
        ]
    )
)


@pytest.mark.parametrize("size", [1, 2, 7, 64, 1 << 20])
def test_candidate_lines_keep_hits_and_their_windows_across_any_chunking(size: int) -> None:
    anchors = [Anchor(b"AER:", after=3), Anchor(b"fallen off the bus", before=2)]
    got = list(candidate_lines(_chunked(LOG, size), anchors))
    lines = LOG.decode().splitlines()
    assert got == [lines[i] for i in (1, 2, 3, 5, 6, 7, 8)]


def test_candidate_lines_overlapping_windows_give_each_line_once() -> None:
    anchors = [Anchor(b"0000:00:03.0", before=1, after=1), Anchor(b"Timeout", after=5)]
    got = list(candidate_lines([LOG], anchors))
    lines = LOG.decode().splitlines()
    assert got == lines[4:11]


def test_candidate_lines_last_line_without_newline_and_invalid_utf8() -> None:
    data = b"a AER: x\n\xff\xfe AER: y"
    assert list(candidate_lines(_chunked(data, 3), [Anchor(b"AER:")])) == [
        "a AER: x",
        "\ufffd\ufffd AER: y",
    ]
    assert list(candidate_lines([], [Anchor(b"AER:")])) == []
    assert list(candidate_lines([b"no match\n"], [Anchor(b"AER:", before=3)])) == []


# facts.md "aer": a line a fixed-width wrap broke is one line. The first two lines of the own
# corpus sample aer/020 (a commit message folded at 76 columns) and a line of aer/005 (shared
# corpus, 4.x wording), stamped, folded as `fold -w 80` folds them.
FOLDED = (
    " pcieport 0000:00:1c.0: PCIe Bus Error: severity=Corrected, type=Physical La",
    "yer, id=00e0(Receiver ID)",
)
STAMPED = (
    "[    3.499183] pcieport 0000:00:1d.0: PCIe Bus Error: severity=Corrected, type=P",
    "hysical Layer, id=00e8(Receiver ID)",
)


@pytest.mark.parametrize(
    ("above", "line"),
    [
        FOLDED,  # split inside a word: joined with nothing added
        STAMPED,
        (STAMPED[0][:-7], " type=Physical Layer, id=00e8(Receiver ID)"),  # at a blank
        # a word wrap that left no blank: the line carries no prefix of its own
        (" pcieport 0000:00:1c.5: PCIe Bus Error: severity=Corrected,", "type=Physical Layer"),
        (" pcieport 0000:00:1c.0:   device [8086:a115] error status/mask=00000001/0000", "2000"),
        ("[ 50.94] pcieport 0000:00:1b.0: PCIe Bus Error:", "severity=Uncorrected (Non-Fatal)"),
        (
            "[ 280.38] pcieport 0000:00:1c.0: AER: Correctable error message received from",
            "0000:00:1c.0",
        ),
        (STAMPED[0], "Layer, (Transmitter ID)\r"),  # a sentence's start below a stamped line
    ],
)
def test_a_continuation_is_the_rest_of_the_line_above(above: str, line: str) -> None:
    assert continues(above, line)
    assert list(unwrap_lines([above, line, "[ 9.0] next: line"])) == [
        above + line,
        "[ 9.0] next: line",
    ]


@pytest.mark.parametrize(
    ("above", "line"),
    [
        # a normal next line, with its own timestamp or log tool's prefix
        (STAMPED[0], "[    3.499183] pcieport 0000:00:1d.0:   device [8086:a29a] error"),
        (STAMPED[0], "Sep 19 16:18:02 host kernel: pcieport 0000:00:1d.0: AER: Corrected"),
        (STAMPED[0], "6,1234,5678901,-;pcieport 0000:00:1d.0: AER: Corrected"),
        (STAMPED[0], "2024-08-30T11:43:09,123456+00:00 usb 1-4: new device"),
        (STAMPED[0], "<4>[    3.499183] pcieport 0000:00:1d.0: AER: Corrected"),
        # a device prefix or a facility of its own (a log with no timestamps)
        (FOLDED[0], " pcieport 0000:00:1c.0:   device [8086:a115] error status/mask=00000001"),
        (FOLDED[0], "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen"),
        (FOLDED[0], "{1}[Hardware Error]: event severity: recoverable"),
        # detail lines of their own: bit lines and the TLP header, indented or not
        (FOLDED[0], "[ 0] RxErr                  (First)"),
        (STAMPED[0], "   [ 0] RxErr                  (First)"),
        (STAMPED[0], "  TLP Header: 34000000 00000052 00000000 00000000"),
        (FOLDED[0], "TLP Header: 34000000 00000052 00000000 00000000"),
        # below a line with no timestamp: an indented line, a sentence
        (FOLDED[0], " dump_stack_lvl+0x4c/0x70"),
        # a call-trace line, below a stamped line too (a log that mixes stamped and unstamped
        # lines: the Xid message above it is not continued)
        (STAMPED[0], "  show_stack+0x52/0x5c"),
        ("[ 5.0] NVRM: Xid (PCI:0000:91:00): 79, pid=1, GPU has fallen off", " ? __die+0x24/0x80"),
        (STAMPED[0], "nvkms_call_rm+0x5a/0x80 [nvidia_modeset]"),
        (FOLDED[0], "Disabling lock debugging due to kernel taint"),
        (FOLDED[0], "Kernel panic - not syncing: Fatal hardware error!"),
        # no word, a heading, a blank line; nothing above
        (STAMPED[0], "..."),
        (STAMPED[0], "Call Trace:"),
        (STAMPED[0], "   "),
        ("", "yer, id=00e0(Receiver ID)"),
        # a /dev/kmsg record's dictionary line
        ("6,1234,5678901,-;pcieport 0000:00:1d.0: AER: Corrected", " SUBSYSTEM=pci"),
    ],
)
def test_a_line_of_its_own_is_never_joined(above: str, line: str) -> None:
    assert not continues(above, line)
    assert list(unwrap_lines([above, line])) == [above, line]


def test_a_line_broken_twice_is_one_line_and_each_break_is_joined_as_it_was() -> None:
    line = "[ 5.1] nvidia 0000:19:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer,"
    pieces = [line[:60], line[60:66], line[66:80], line[80:]]
    assert list(unwrap_lines([*pieces, line])) == [line, line]
    assert list(unwrap_lines([])) == []


def test_a_line_is_joined_to_at_most_max_joined_characters() -> None:
    """A log of short lines that each look like the rest of the one above (no prefix, no
    label) stays many lines: memory and time never grow with the length of such a run."""
    lines = ["word"] * (3 * MAX_JOINED)
    joined = list(unwrap_lines(lines))
    assert "".join(joined) == "word" * len(lines)
    assert all(len(line) <= MAX_JOINED for line in joined) and len(joined) == 12
