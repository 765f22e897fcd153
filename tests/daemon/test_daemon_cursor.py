"""The kernel-log cursor: resume after it, start over when the log is another one."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from sitscheck.daemon.cursor import KernelCursor, LogFollow, filter_since, kmsg_seq, line_hash

BUNDLE_DMESG = Path(__file__).resolve().parents[1] / "bundles" / "h200x2-idle-v0" / "dmesg.txt"


def kmsg(seq: int, text: str, usec: int | None = None) -> str:
    return f"6,{seq},{usec if usec is not None else seq * 1000},-;{text}"


def drain(
    lines: Iterable[str], cursor: KernelCursor | None, **kw: str
) -> tuple[list[str], LogFollow]:
    out, follow = filter_since(lines, cursor, **kw)
    return list(out), follow


def first_read(lines: list[str], **kw: str) -> KernelCursor:
    got, follow = drain(lines, None, **kw)
    assert got == lines
    assert follow.complete and follow.cursor is not None
    return follow.cursor


# --- kmsg -------------------------------------------------------------------------------------


def test_kmsg_cursor_is_the_last_sequence_number_and_its_hash() -> None:
    lines = [kmsg(0, "Linux version"), kmsg(1, "a"), " SUBSYSTEM=pci", kmsg(2, "b")]
    cursor = first_read(lines, boot_id="B1", source="/dev/kmsg")
    assert cursor.kind == "kmsg"
    assert (cursor.seq, cursor.lines, cursor.boot_id) == (2, None, "B1")
    assert cursor.last_hash == line_hash(kmsg(2, "b"))


def test_kmsg_resumes_after_the_cursor_skipping_its_continuation_lines() -> None:
    old = [kmsg(0, "boot"), kmsg(1, "a"), kmsg(2, "b"), " SUBSYSTEM=pci", " DEVICE=+pci:x"]
    cursor = first_read(old, boot_id="B1")
    grown = [*old, kmsg(3, "c"), " SUBSYSTEM=pci", kmsg(4, "d")]
    got, follow = drain(grown, cursor, boot_id="B1")
    assert got == [kmsg(3, "c"), " SUBSYSTEM=pci", kmsg(4, "d")]
    assert follow.resumed and follow.reset is None
    assert follow.skipped == len(old) and follow.new_lines == 3
    assert follow.cursor is not None and follow.cursor.seq == 4


def test_kmsg_nothing_new_keeps_the_cursor() -> None:
    old = [kmsg(0, "boot"), kmsg(1, "a")]
    cursor = first_read(old)
    got, follow = drain(old, cursor)
    assert got == []
    assert follow.resumed and follow.cursor == cursor


def test_kmsg_new_boot_id_reads_everything_again() -> None:
    old = [kmsg(0, "boot"), kmsg(1, "a"), kmsg(2, "b")]
    cursor = first_read(old, boot_id="B1")
    rebooted = [kmsg(0, "boot"), kmsg(1, "a"), kmsg(2, "b"), kmsg(3, "c")]
    got, follow = drain(rebooted, cursor, boot_id="B2")
    assert got == rebooted
    assert not follow.resumed and follow.reset is not None and "boot" in follow.reset
    assert follow.cursor is not None and follow.cursor.boot_id == "B2"


def test_kmsg_another_boot_detected_without_boot_id_by_the_record_hash() -> None:
    old = [kmsg(0, "boot"), kmsg(1, "a"), kmsg(2, "b")]
    cursor = first_read(old)
    other_boot = [kmsg(0, "boot", 5), kmsg(1, "x", 7), kmsg(2, "y", 9), kmsg(3, "z", 11)]
    got, follow = drain(other_boot, cursor)
    assert got == other_boot
    assert follow.reset is not None and not follow.resumed


def test_kmsg_another_boot_that_ends_before_the_cursor_is_read_whole() -> None:
    old = [kmsg(seq, f"m{seq}") for seq in range(10)]
    cursor = first_read(old)
    short = [kmsg(0, "boot", 1), kmsg(1, "only", 2)]
    got, follow = drain(short, cursor)
    assert got == short
    assert follow.reset is not None and "ends before" in follow.reset


def test_kmsg_record_missing_between_older_and_newer_ones_is_another_boot() -> None:
    old = [kmsg(0, "boot"), kmsg(5, "five")]
    cursor = first_read(old)
    other = [kmsg(0, "boot"), kmsg(6, "six")]
    got, follow = drain(other, cursor)
    assert got == other and follow.reset is not None


def test_kmsg_ring_buffer_overwritten_past_the_cursor_reads_all_with_a_note() -> None:
    cursor = first_read([kmsg(0, "boot"), kmsg(1, "a")], boot_id="B1")
    wrapped = [kmsg(50, "x"), kmsg(51, "y")]
    got, follow = drain(wrapped, cursor, boot_id="B1")
    assert got == wrapped
    assert follow.resumed and follow.reset is None
    assert any("2..49" in note for note in follow.notes)


def test_kmsg_log_starting_with_a_continuation_line_is_still_kmsg() -> None:
    cursor = first_read([" DEVICE=+pci:0000:3b:00.0", kmsg(7, "a"), kmsg(8, "b")])
    assert cursor.kind == "kmsg" and cursor.seq == 8


def test_kmsg_seq_only_for_raw_records() -> None:
    assert kmsg_seq("6,1234,5678901,-;msg") == 1234
    assert kmsg_seq("4,368,1076345,c;NVRM: x") == 368
    assert kmsg_seq("[  123.456] msg") is None
    assert kmsg_seq("2024-08-30T11:43:09,123456+00:00 msg") is None
    assert kmsg_seq(" SUBSYSTEM=pci") is None


def test_recorded_bundle_log_resumes_after_its_last_record() -> None:
    lines = BUNDLE_DMESG.read_text(encoding="utf-8").splitlines()
    cursor = first_read(lines, boot_id="B", source="bundle/dmesg.txt")
    assert cursor.seq == 370
    grown = [*lines, kmsg(371, "NVRM: Xid (PCI:0000:00:06): 79, pid=1, name=x, GPU has fallen")]
    got, follow = drain(grown, cursor, boot_id="B", source="bundle/dmesg.txt")
    assert got == grown[-1:]
    assert follow.skipped == len(lines)


# --- text ------------------------------------------------------------------------------------


def text(n: int, start: int = 0) -> list[str]:
    return [f"[{i:>6}.000000] line {i}" for i in range(start, start + n)]


def test_text_cursor_is_the_line_count_and_the_hash_of_the_last_line() -> None:
    cursor = first_read(text(5), source="dmesg")
    assert cursor.kind == "text"
    assert (cursor.lines, cursor.seq) == (5, None)
    assert cursor.last_hash == line_hash(text(5)[-1])


def test_text_grown_file_resumes_after_the_old_end() -> None:
    cursor = first_read(text(5), source="dmesg")
    got, follow = drain(text(8), cursor, source="dmesg")
    assert got == text(3, start=5)
    assert follow.resumed and follow.skipped == 5
    assert follow.cursor is not None and follow.cursor.lines == 8


def test_text_rewritten_file_starts_over() -> None:
    cursor = first_read(text(5), source="kern.log")
    rotated = [f"rotated {i}" for i in range(7)]
    got, follow = drain(rotated, cursor, source="kern.log")
    assert got == rotated
    assert not follow.resumed and follow.reset is not None and "rotated" in follow.reset


def test_text_shorter_file_without_the_old_end_starts_over() -> None:
    cursor = first_read(text(5))
    got, follow = drain(["new 0", "new 1"], cursor)
    assert got == ["new 0", "new 1"] and follow.reset is not None


def test_text_head_dropped_resumes_after_the_last_line_read() -> None:
    cursor = first_read(text(10))
    trimmed = text(12, start=3)  # lines 0..2 dropped from the ring, 10..14 new
    got, follow = drain(trimmed, cursor)
    assert got == text(5, start=10)
    assert follow.resumed and follow.notes


def test_text_changed_source_starts_over() -> None:
    cursor = first_read(text(3), source="/var/log/kern.log")
    got, follow = drain(text(4), cursor, source="dmesg")
    assert got == text(4) and follow.reset is not None and "source" in follow.reset


def test_kind_change_starts_over() -> None:
    cursor = first_read([kmsg(0, "a"), kmsg(1, "b")])
    got, follow = drain(text(2), cursor)
    assert got == text(2) and follow.reset is not None and "kind" in follow.reset


# --- completion -----------------------------------------------------------------------------


def test_cursor_is_final_only_once_the_lines_are_exhausted() -> None:
    out, follow = filter_since(iter(text(5)), None)
    next(out)
    assert not follow.complete and follow.cursor is None
    list(out)
    assert follow.complete and follow.cursor is not None


def test_empty_log_gives_no_cursor() -> None:
    got, follow = drain([], None)
    assert got == [] and follow.complete and follow.cursor is None


def test_cursor_needs_exactly_one_position() -> None:
    with pytest.raises(ValueError):
        KernelCursor(seq=1, lines=2)
    with pytest.raises(ValueError):
        KernelCursor()
