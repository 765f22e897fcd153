"""A stand-in for `sitscheck.probes.accept`: it speaks the child's JSON-lines protocol
(`sitscheck.probes.accept.child`) and behaves as asked, so the parent's runner can be tested
without a GPU.

    python -m fake_workloads.behave PHASE --seconds S [--engine E] [--expect-digest D]
                                    [--inject BEHAVIOUR | --inject PHASE-BEHAVIOUR]

BEHAVIOUR (default `ok`) is one of `BEHAVIOURS`. The parent picks it per GPU with
`--inject FAULT:GPU` (FAULT `memtest-hang` reaches the memtest child as `--inject memtest-hang`);
where the parent passes no `--inject` (`run --load`, `run --bandwidth`), SITSCHECK_FAKE_BEHAVIOUR
picks it: a behaviour for every child, or `UUID=BEHAVIOUR,...` per GPU (`ok` for the others).

With SITSCHECK_FAKE_MARKS=DIR in the environment (SITSCHECK_* variables reach a child), the
child writes DIR/<uuid>.<phase>.pids (its pid, then any grandchild's) before it says anything,
and DIR/<uuid>.<phase>.doing once its `doing` line is flushed: a test waits on the files, never
on time.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

BEHAVIOURS = (
    "ok",  # ready, doing, a figure, soak times, the result, exit 0
    "error",  # ready, doing, an error line, exit 1
    "exit1",  # ready, doing, exit 1 without a last line
    "segv",  # ready, doing, killed by SIGSEGV
    "hang",  # ready, doing, then sleeps for ever ignoring SIGTERM/SIGINT, with a grandchild
    "no-ready",  # says nothing, sleeps for ever ignoring SIGTERM (stuck starting)
    "close-stdout",  # ready, doing, closes its stdout, sleeps for ever ignoring SIGTERM
    "result-then-hang",  # the result, then sleeps for ever ignoring SIGTERM
    "error-then-hang",  # an error line, then sleeps for ever ignoring SIGTERM
    "grandchild-holds-pipe",  # a grandchild keeps stdout open; the child prints its result, exits
    "garbage",  # every malformed line there is, then the result
    "huge-line",  # a 3 MiB line, then the result
    "work",  # ready, doing, then ~1 MiB/s of soak times until --seconds or SIGTERM, the result
    "bandwidth",  # the bandwidth probe's one line: its record (format sitscheck-bandwidth)
)
BEHAVIOUR_VARIABLE = "SITSCHECK_FAKE_BEHAVIOUR"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fake_workloads.behave")
    parser.add_argument("phase")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--engine", default="auto")
    parser.add_argument("--expect-digest", default=None)
    parser.add_argument("--inject", default=None)
    args = parser.parse_args(argv)
    uuid = os.environ.get("CUDA_VISIBLE_DEVICES", "none")
    behaviour = (args.inject or _behaviour(uuid)).removeprefix(f"{args.phase}-")
    marks = os.environ.get("SITSCHECK_FAKE_MARKS")  # fake_workloads.MARKS_VARIABLE
    pids = [os.getpid()]
    if behaviour in ("hang", "grandchild-holds-pipe"):
        pids.append(_grandchild())
    if behaviour in ("hang", "no-ready", "close-stdout", "result-then-hang", "error-then-hang"):
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
    mark = f"{marks}/{uuid}.{args.phase}" if marks else None
    if mark is not None:
        Path(f"{mark}.args").write_text(json.dumps(argv), encoding="utf-8")
        Path(f"{mark}.pids").write_text(" ".join(map(str, pids)), encoding="ascii")
    if behaviour == "bandwidth":
        _send("result", format="sitscheck-bandwidth", version=1, gpus=[], errors=[],
              cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"))  # fmt: skip
        return 0
    if behaviour == "no-ready":
        _forever()
    result = {
        "phase": args.phase,
        "uuid": uuid,
        "seconds_asked": args.seconds,
        "engine_asked": args.engine,
        "expect_digest": args.expect_digest,
        "digest": f"d-{args.phase}",
        "seconds": 0.01,
    }
    if behaviour == "result-then-hang":
        _send("result", **result)
        _forever()
    if behaviour == "error-then-hang":
        _send("error", reason="could not allocate (fake)")
        _forever()
    _send("ready", engine="fake")
    _send("doing", what=f"{args.phase}: fake work on {uuid}")
    if mark is not None:
        Path(f"{mark}.doing").write_text("", encoding="ascii")
    if behaviour == "work":
        return _work(args.seconds, result, mark)
    return _act(behaviour, result)


def _behaviour(uuid: str) -> str:
    given = os.environ.get(BEHAVIOUR_VARIABLE, "ok")
    if "=" not in given:
        return given
    chosen = dict(pair.split("=", 1) for pair in given.split(","))
    return chosen.get(uuid, "ok")


def _work(seconds: float, result: dict[str, object], mark: str | None) -> int:
    """At work until `seconds` pass or a signal: every 0.1 s a `times` line and ~100 KiB of a
    line the parent ignores (a parent that stops reading would leave it blocked in its write),
    and a beat counted in MARK.beats after them; then the result, saying what ended it."""
    stopped: list[str] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _: stopped.append(signal.Signals(signum).name))
    began = time.monotonic()
    beats = 0
    while not stopped and time.monotonic() - began < seconds:
        _send("times", t=round(time.monotonic() - began, 3), ms=[1.5])
        _send("padding", text="x" * 100_000)
        beats += 1
        if mark is not None:
            Path(f"{mark}.beats").write_text(str(beats), encoding="ascii")
        time.sleep(0.1)
    _send("result", **result, beats=beats, stopped_by=stopped[0] if stopped else None)
    return 0


def _act(behaviour: str, result: dict[str, object]) -> int:
    if behaviour == "hang":
        _forever()
    if behaviour == "close-stdout":
        sys.stdout.flush()
        os.close(1)
        _forever()
    if behaviour == "error":
        _send("error", reason="cuInit failed (fake): CUDA_ERROR_NO_DEVICE")
        return 1
    if behaviour == "exit1":
        return 1
    if behaviour == "segv":
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGSEGV)
        _forever()
    if behaviour == "garbage":
        _garbage()
    if behaviour == "huge-line":
        sys.stdout.write("x" * (3 << 20) + "\n")
    _send("figure", value=42.5, unit="TFLOP/s")
    _send("times", t=1.0, ms=[1.5, 1.6])
    _send("times", t=2.0, ms=[1.7])
    _send("result", **result)
    return 0


def _garbage() -> None:
    out = sys.stdout.buffer
    for line in (
        b"not json at all",
        b"\xff\xfe invalid utf-8 \x80",
        b"[1, 2, 3]",
        b'"a string"',
        b"[" * 200_000,
        b"1" * 10_000,
        b'{"event": "times", "t": "soon", "ms": [1.0]}',
        b'{"event": "times", "t": 1.0, "ms": ["x", {}]}',
        b'{"event": "times", "t": 1.0, "ms": 7}',
        b'{"event": "unheard-of", "x": 1}',
        b'{"event": "figure", "value": {"a": 1}, "unit": "\\u001b[2J"}',
        json.dumps({"event": "doing", "what": "\x1b[31mred\x07\u202e" + "y" * 100_000}).encode(),
    ):
        out.write(line + b"\n")
    out.flush()


def _send(event: str, **fields: object) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def _grandchild() -> int:
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _forever()
    return pid


def _forever() -> None:
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
