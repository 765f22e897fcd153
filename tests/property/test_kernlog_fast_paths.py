"""The shortcuts of the kernel-log hot path give exactly what the general code gives.

- `iter_kernel_lines` splits a line with a plain `dmesg` stamp by one match: the result is the
  `split_kernel_line` one, whatever follows the stamp (another prefix, or text that looks like
  one);
- `parse_aer` reads each distinct line body once: an error storm of one report repeated gives
  that report's events each time, and the same events whatever other lines come in between;
- the objects both make have every field set (a copy of each field is equal);
- the AER tally reads a plain stamp's seconds as `times.seconds` does.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace
from sitscheck.checks.pcie_aer.parse import parse_aer
from sitscheck.checks.pcie_aer.tally import _seconds
from sitscheck.kernlog.lines import KernelLine, iter_kernel_lines, split_kernel_line
from sitscheck.kernlog.times import seconds

_STAMP_PARTS = st.tuples(
    st.sampled_from(["", " ", "    ", " " * 24, " " * 25, "\t"]),
    st.sampled_from(["", "+"]),
    st.sampled_from(["0", "123", "68183", "9" * 24, "9" * 25, ""]),
    st.sampled_from([".", ",", ""]),
    st.sampled_from(["000316", "1", "1" * 12, "1" * 13, ""]),
    st.sampled_from(["]", "] ", "]  ", "]\t", ""]),
)

# what may follow a stamp: messages, other prefixes, and text that only looks like one
_AFTER = [
    "nvidia 0000:98:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer",
    "pcieport 10000:e0:06.0: AER: Corrected error received: 10000:e1:00.0",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=a, GPU has fallen off the bus.",
    "[  T291] ",
    "[C3] ",
    "[  123.5] ",
    "<4>",
    "gpu-07 kernel: ",
    "gpu-07\u3000kernel[0]: ",
    "kernel: ",
    "kernel 0000:00:1c.0: ",
    "kern  :err   : ",
    "kern 0000:00:1c.0: ",
    "local7:debug: ",
    "Sep 19 16:18:02 gpu-07 kernel: ",
    "Sep 19 16:18:02 ",
    "Thu 2024-09-19 16:18:02 CEST gpu-07 kernel: ",
    "2024-09-19T16:18:02.123456+02:00 ",
    "2024-09-19 x",
    "host 1234-",
    "a 12 13:",
    "a 0000: kernel: ",
    "фев 12 00:48:02 kernel: ",
    "x 12345:",
    "USB 0000:00:14.0: ",
    "  show_stack+0x52/0x5c",
    " ",
    "\t",
    "²",
    "",
]


@settings(max_examples=600)
@given(
    stamp=_STAMP_PARTS.map("[{0[0]}{0[1]}{0[2]}{0[3]}{0[4]}{0[5]}".format),
    after=st.lists(st.sampled_from(_AFTER), max_size=3).map("".join),
    newline=st.sampled_from(["", "\n", "\r\n"]),
)
def test_plain_stamp_shortcut_gives_the_general_split(stamp: str, after: str, newline: str) -> None:
    raw = stamp + after + newline
    assert list(iter_kernel_lines([raw])) == [split_kernel_line(raw)]


def test_plain_stamp_shortcut_sets_every_field() -> None:
    (line,) = iter_kernel_lines(["[  123.456789] nvidia 0000:98:00.0: RxErr\n"])
    assert line == KernelLine(body="nvidia 0000:98:00.0: RxErr", time="123.456789")
    assert line == replace(line)  # every field of the class set, as its __init__ sets them


_REPORT = [
    "pcieport 0000:97:01.0: AER: Multiple Correctable error message received from 0000:98:00.0",
    "pcieport 0000:97:01.0: PCIe Bus Error: severity=Correctable, type=Data Link Layer, "
    "(Transmitter ID)",
    "pcieport 0000:97:01.0:   device [8086:352a] error status/mask=00001100/00002000",
    "pcieport 0000:97:01.0:    [ 8] Rollover",
    "pcieport 0000:97:01.0:    [12] Timeout",
    "nvidia 0000:98:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)",
    "nvidia 0000:98:00.0:   device [10de:2330] error status/mask=00000001/0000e000",
    "nvidia 0000:98:00.0:    [ 0] RxErr",
]


@settings(max_examples=100)
@given(
    times=st.integers(min_value=1, max_value=40),
    noise=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=400),
            st.sampled_from(
                [
                    "nvme nvme0: I/O 258 (I/O Cmd) QID 4 timeout, aborting",
                    "pcieport 0000:00:1c.0: AER: enabled with IRQ 122",
                    "ahci 0000:01:00.0: AER: can't recover (no error_detected callback)",
                ]
            ),
        ),
        max_size=20,
    ),
)
def test_a_storm_of_one_report_gives_its_events_each_time(
    times: int, noise: list[tuple[int, str]]
) -> None:
    single = [event.to_fact() for event in parse_aer(iter_kernel_lines(_REPORT))]
    storm = [f"[{n:12.6f}] {body}" for n in range(times) for body in _REPORT]
    for position, line in noise:
        storm.insert(min(position, len(storm)), line)
    events = parse_aer(iter_kernel_lines(storm))
    assert all(event == replace(event) for event in events)  # every field set, as by __init__
    facts = [event.to_fact() for event in events]
    assert len(facts) == times * len(single)
    for index, fact in enumerate(facts):
        assert fact["time"] == f"{index // len(single)}.000000"
        assert {**fact, "time": None} == single[index % len(single)]


@settings(max_examples=500)
@given(
    when=st.none()
    | st.text(max_size=30)
    | st.lists(
        st.sampled_from(["0", "9", "68183", ".", "615790", " ", "+", "-", "e", "_", "٣", ":", "T"]),
        max_size=8,
    ).map("".join)
)
def test_the_tallys_seconds_are_those_of_times(when: str | None) -> None:
    fast, general = _seconds(when), seconds(when)
    assert fast == general or (fast != fast and general != general)  # both NaN ("nan")
