"""`python -m benchmarks --reference-python PY`: this tree's whole runs against a reference's.

The reference is another checkout's interpreter: a venv in which `python -m sitscheck` runs
that checkout (issue 31 measures against main at 64d3a49). Each row runs the same command
line with both interpreters, alternated (reference, this tree, reference, ...), `--repeat`
times each (default 5), and keeps the fastest run of each: the machines are shared and noisy,
and a ratio taken in the same minute holds where absolute times do not.

Each interpreter runs from a folder of its own under the scratch folder (its reports land
there) and keeps its bytecode there (PYTHONPYCACHEPREFIX, written by one warm-up run before
anything is measured): the runs are byte-compiled as an install leaves them, and nothing is
written into either checkout.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .measure import Sample, run
from .synth import kernel_log, storm_log

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "tests" / "bundles" / "h200x2-idle-v0"
EXAMPLE = ROOT / "examples" / "h200x2-idle"
GENEROUS = ("--run-timeout", "600", "--timeout", "600")


@dataclass(frozen=True)
class Side:
    """One interpreter: the reference's or this tree's."""

    label: str
    python: str
    folder: Path  # its working folder: its reports and its bytecode

    def argv(self, *args: str) -> list[str]:
        return [self.python, "-m", "sitscheck", *args]

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(self.folder / "pycache")
        return env

    def measure(self, *args: str) -> Sample:
        return run(self.argv(*args), self.env(), self.folder)


def origin(python: str) -> str:
    """Where an interpreter imports sitscheck from, and that checkout's commit."""
    code = "import sitscheck, os; print(os.path.dirname(sitscheck.__file__))"
    found = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=False, cwd="/"
    )
    where = found.stdout.strip() or f"(no sitscheck: {found.stderr.strip()[-200:]})"
    commit = subprocess.run(
        ["git", "-C", where, "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"{where} ({commit or 'not a git checkout'})"


@dataclass(frozen=True)
class Row:
    name: str
    ref: Sample
    this: Sample
    target: str
    ok: bool
    note: str = ""


@dataclass(frozen=True)
class Bench:
    ref: Side
    this: Side
    repeat: int
    scratch: Path
    log_mb: int
    storm_mb: int

    def pair(self, *args: str) -> tuple[Sample, Sample]:
        """Both interpreters `repeat` times, alternated; the fastest run of each."""
        refs, ours = [], []
        for _ in range(self.repeat):
            refs.append(self.ref.measure(*args))
            ours.append(self.this.measure(*args))
        return min(refs, key=lambda s: s.wall_s), min(ours, key=lambda s: s.wall_s)


def same_exit(ref: Sample, this: Sample) -> bool:
    """A run that fails early is fast: a row holds only when both ended alike."""
    return ref.returncode == this.returncode and this.returncode in (0, 1, 2)


def start_up(b: Bench) -> list[Row]:
    """`--version` and `checks`: what every run pays before it reads anything."""
    rows = []
    for args in (("--version",), ("checks",)):
        r, t = b.pair(*args)
        ok = t.wall_s <= 1.3 * r.wall_s and same_exit(r, t)
        rows.append(Row(f"start-up: sitscheck {args[0]}", r, t, "<= 1.3x reference", ok))
    return rows


def replay_example(b: Bench) -> list[Row]:
    """The example replayed: every run reads and compiles its rules (nothing is kept between
    runs), so this is a timer's run and the first run after an install alike."""
    r, t = b.pair("run", "--from", str(EXAMPLE), "-o", "json=/dev/null")
    ok = t.wall_s <= 0.9 and t.max_rss_mb <= 80 and same_exit(r, t)
    return [Row("replay: examples/h200x2-idle", r, t, "<= 0.9 s, <= 80 MB", ok)]


def realistic_log(b: Bench) -> list[Row]:
    """The recorded idle node with a dmesg ring buffer's worth of ordinary kernel lines and
    200 AER and Xid reports spread through it: a node's whole replay."""
    bundle = _bundle_copy(b.scratch / "log")
    kernel_log(bundle / "dmesg.txt", b.log_mb, matches=200)
    r, t = b.pair("run", "--from", str(bundle), "-o", "json=/dev/null", *GENEROUS)
    ok = t.wall_s <= 1.3 * r.wall_s and t.max_rss_mb <= 80 and same_exit(r, t)
    name = f"whole run: {b.log_mb} MB kernel log, 200 reports"
    return [Row(name, r, t, "<= 1.3x reference, <= 80 MB", ok)]


def aer_storm(b: Bench) -> list[Row]:
    """The recorded idle node whose kernel log is an AER storm (a corrected-error report every
    20 lines): a node's whole replay, with its JSON report."""
    bundle = _bundle_copy(b.scratch / "storm")
    reports = storm_log(bundle / "dmesg.txt", b.storm_mb)
    r, t = b.pair("run", "--from", str(bundle), "-o", "json=storm.json", *GENEROUS)
    report = b.this.folder / "storm.json"
    size = report.stat().st_size / 1e6 if report.exists() else float("inf")
    ok = t.wall_s <= 2.5 * r.wall_s and t.max_rss_mb <= 100 and size <= 5 and same_exit(r, t)
    name = f"whole run: {b.storm_mb} MB AER storm ({reports} reports)"
    target = "<= 2.5x reference, <= 100 MB, report <= 5 MB"
    return [Row(name, r, t, target, ok, f"report {size:.2f} MB")]


ROWS: dict[str, Callable[[Bench], list[Row]]] = {
    "startup": start_up,
    "replay": replay_example,
    "log": realistic_log,
    "storm": aer_storm,
}


def _bundle_copy(folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(BUNDLE, folder)
    return folder


def show(row: Row) -> str:
    def one(s: Sample) -> str:
        return f"{s.wall_s:.2f} s, {s.max_rss_mb:.0f} MB, exit {s.returncode}"

    ratio = row.this.wall_s / row.ref.wall_s
    note = f", {row.note}" if row.note else ""
    verdict = "yes" if row.ok else "NO"
    return (
        f"{row.name}: {verdict:<3} | this {one(row.this)}{note} | reference {one(row.ref)} "
        f"| ratio {ratio:.2f}x | target {row.target}"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--reference-python", required=True, help="the reference checkout's python")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each, alternated (5)")
    parser.add_argument("--only", default=",".join(ROWS), help=f"rows, of {','.join(ROWS)}")
    parser.add_argument("--log-mb", type=int, default=16, help="the realistic kernel log (16)")
    parser.add_argument("--storm-mb", type=int, default=256, help="the AER storm (256)")
    parser.add_argument("--scratch", type=Path, help="kept after the run (default: a temp dir)")
    args = parser.parse_args(argv)
    wanted = [name for name in args.only.split(",") if name]
    if unknown := sorted(set(wanted) - set(ROWS)):
        parser.error(f"--only: no row {', '.join(unknown)} (rows: {', '.join(ROWS)})")
    origins = {"reference": origin(args.reference_python), "this tree": origin(sys.executable)}
    if origins["reference"] == origins["this tree"]:
        parser.error(f"the reference is this tree ({origins['reference']}): nothing to compare")
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="sitscheck-bench-"))
    try:
        return run_rows(args, wanted, scratch, origins)
    finally:
        if args.scratch is None:
            shutil.rmtree(scratch, ignore_errors=True)


def run_rows(
    args: argparse.Namespace, wanted: list[str], scratch: Path, origins: dict[str, str]
) -> int:
    ref = Side("reference", args.reference_python, scratch / "reference")
    this = Side("this tree", sys.executable, scratch / "this")
    for side in (ref, this):
        side.folder.mkdir(parents=True, exist_ok=True)
        print(f"{side.label}: {side.python}: sitscheck from {origins[side.label]}")
        side.measure("checks")  # the bytecode, written once
        side.measure("run", "--from", str(EXAMPLE), "-o", "json=/dev/null")
    print(
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
        f"fastest of {args.repeat} runs of each, alternated"
    )
    bench = Bench(ref, this, args.repeat, scratch, args.log_mb, args.storm_mb)
    rows: list[Row] = []
    for name in wanted:
        for row in ROWS[name](bench):
            print(show(row), flush=True)
            rows.append(row)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0 if all(row.ok for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
