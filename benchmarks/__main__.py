"""`python -m benchmarks`: every benchmark against a reference measured in the same run.

Each row names its measure, its reference (taken in the same run), its target and the peak
RSS of what it measured. Nothing tracked is written: the import-time profile goes to the
scratch folder (its path is printed).

Environment: BENCH_LOG_MB (the few-matches kernel log, default 1024), BENCH_STORM_MB (the
AER storm, default 256), BENCH_RU_MB (the Russian journal, default 512), BENCH_GPUS (the
large node of the rules row, default 256), BENCH_REPEAT (best of N, default 3), BENCH_DIR
(scratch folder, default a temp dir, removed after), BENCH_ONLY (comma-separated groups:
startup, replay, whole, kernlog, russian, storm, rules, live; default all).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .measure import Sample, best_of
from .synth import AER_REPORT, journal_ru, kernel_log, large_node_bundle, many_rules, storm_log

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "tests" / "bundles" / "h200x2-idle-v0"
EXAMPLE = ROOT / "examples" / "h200x2-idle"
PY = sys.executable
RSS_MB = 80.0  # every row's peak RSS target but the storm's
STORM_RSS_MB = 100.0
GREP = ["grep", "-cE", "AER|Xid|SXid"]
SCAN_CODE = (
    "import sys; from pathlib import Path; "
    "from sitscheck.contract.registry import discover; "
    "from sitscheck.kernlog.scan import declared_interests, scan_file; "
    "scan_file(Path(sys.argv[1]), declared_interests(discover()))"
)


@dataclass(frozen=True)
class Row:
    name: str
    measured: str
    reference: str
    target: str
    ok: bool


def sitscheck(*args: str) -> list[str]:
    return [PY, "-m", "sitscheck", *args]


def rss(sample: Sample, limit: float = RSS_MB) -> str:
    return f"peak RSS {sample.max_rss_mb:.0f} MB{'' if sample.max_rss_mb <= limit else ' (over)'}"


def bench_startup(repeat: int, scratch: Path) -> list[Row]:
    bare = best_of([PY, "-c", "pass"], repeat)
    rows = []
    for args in (("--version",), ("checks",)):
        sample = best_of(sitscheck(*args), repeat)
        limit = 1.5 * bare.wall_s + 0.1
        rows.append(
            Row(
                f"start-up: sitscheck {' '.join(args)}",
                f"{sample.wall_s * 1000:.0f} ms, {rss(sample)}",
                f"python -c pass {bare.wall_s * 1000:.0f} ms",
                f"<= 1.5x + 100 ms = {limit * 1000:.0f} ms",
                sample.wall_s <= limit and sample.max_rss_mb <= RSS_MB,
            )
        )
    profile = subprocess.run(  # the slower of the two: every import of --version and more
        [PY, "-X", "importtime", "-m", "sitscheck", "checks"],
        capture_output=True,
        text=True,
        check=False,
    ).stderr
    (scratch / "importtime.txt").write_text(profile)
    return rows


def bench_whole_run(scratch: Path, repeat: int) -> tuple[list[Row], Sample]:
    bundle = scratch / "node8"
    large_node_bundle(BUNDLE, bundle, gpus=8, log_lines=200_000)
    bare = best_of([PY, "-c", "pass"], repeat)
    sample = best_of(sitscheck("run", "--from", str(bundle), "--output", "json=/dev/null"), repeat)
    return [
        Row(
            "whole run: 8-GPU bundle, 1 h busy kernel log (200k lines)",
            f"{sample.wall_s:.2f} s, exit {sample.returncode}",
            f"python -c pass {bare.wall_s * 1000:.0f} ms "
            f"(ratio {sample.wall_s / bare.wall_s:.1f}x)",
            "< 2 s (no sampling window in a replay)",
            sample.wall_s < 2.0,
        ),
        Row(
            "footprint: peak RSS of that run",
            f"{sample.max_rss_mb:.1f} MB",
            f"python -c pass {bare.max_rss_mb:.1f} MB",
            "<= 80 MB",
            sample.max_rss_mb <= 80.0,
        ),
    ], sample


def bench_daemon_cpu(run_sample: Sample) -> Row:
    cpu_per_hour = run_sample.cpu_s * 12  # a run every 5 minutes
    millicores = cpu_per_hour / 3600 * 1000
    return Row(
        "daemon CPU at a 5-minute interval",
        f"{millicores:.2f} millicores ({run_sample.cpu_s:.2f} CPU-s a run)",
        "GPUd published steady ~20 millicores",
        "below GPUd",
        millicores < 20.0,
    )


def bench_kernel_log(scratch: Path, size_mb: int, repeat: int) -> list[Row]:
    log = scratch / "kern.log"
    kernel_log(log, size_mb, matches=500)
    grep = best_of([*GREP, str(log)], repeat)
    scan = best_of([PY, "-c", SCAN_CODE, str(log)], repeat)
    rows = [
        Row(
            f"kernel log: {size_mb} MB, few matches",
            f"{scan.wall_s:.2f} s, {rss(scan)}",
            f"grep -E 'AER|Xid|SXid' {grep.wall_s:.2f} s (ratio {scan.wall_s / grep.wall_s:.2f}x)",
            "<= 3x grep, bounded memory",
            scan.wall_s <= 3 * grep.wall_s and scan.max_rss_mb <= RSS_MB,
        )
    ]
    dense = scratch / "aer.log"
    lines = 100_000
    with dense.open("w") as out:
        for n in range(lines // len(AER_REPORT)):
            for row in AER_REPORT:
                out.write(row.format(t=n * 0.001, b=0x16, d=0x19) + "\n")
    sample = best_of([PY, "-c", SCAN_CODE, str(dense)], repeat)
    bare = best_of([PY, "-c", "pass"], repeat)
    rate = lines / max(sample.wall_s - bare.wall_s, 1e-6)
    rows.append(
        Row(
            "kernel log: 100k AER lines",
            f"{rate / 1000:.0f}k lines/s, {rss(sample)}",
            f"python start-up {bare.wall_s * 1000:.0f} ms subtracted",
            ">= 300k lines/s",
            rate >= 300_000 and sample.max_rss_mb <= RSS_MB,
        )
    )
    return rows


def bench_journal_ru(scratch: Path, size_mb: int, repeat: int) -> Row:
    log = scratch / "journal-ru.log"
    journal_ru(log, size_mb, matches=500)
    grep = best_of([*GREP, str(log)], repeat)
    scan = best_of([PY, "-c", SCAN_CODE, str(log)], repeat)
    return Row(
        f"kernel log: {size_mb} MB journalctl in Russian (mostly non-ASCII)",
        f"{scan.wall_s:.2f} s, {rss(scan)}",
        f"grep -E 'AER|Xid|SXid' {grep.wall_s:.2f} s (ratio {scan.wall_s / grep.wall_s:.2f}x)",
        "<= 3x grep",
        scan.wall_s <= 3 * grep.wall_s and scan.max_rss_mb <= RSS_MB,
    )


def bench_storm(scratch: Path, size_mb: int, repeat: int) -> Row:
    """A whole replay of a node whose kernel log is an AER storm, with its JSON report."""
    bundle = scratch / "storm"
    if bundle.exists():
        shutil.rmtree(bundle)
    shutil.copytree(BUNDLE, bundle)
    reports = storm_log(bundle / "dmesg.txt", size_mb)
    grep = best_of([*GREP, str(bundle / "dmesg.txt")], repeat)
    report = scratch / "storm.json"
    argv = sitscheck("run", "--from", str(bundle), "--output", f"json={report}")
    run = best_of([*argv, "--run-timeout", "600", "--timeout", "600"], repeat)
    size = report.stat().st_size / 1e6 if report.exists() else float("nan")
    ratio = run.wall_s / grep.wall_s
    return Row(
        f"kernel log: {size_mb} MB AER storm (a report every 20 lines, {reports} reports), "
        "whole replay",
        f"{run.wall_s:.2f} s, {rss(run, STORM_RSS_MB)}, report {size:.2f} MB",
        f"grep -E 'AER|Xid|SXid' {grep.wall_s:.2f} s (ratio {ratio:.1f}x)",
        "<= 12x grep, <= 100 MB RSS, report <= 5 MB",
        ratio <= 12 and run.max_rss_mb <= STORM_RSS_MB and size <= 5,
    )


def bench_replay_example(repeat: int) -> list[Row]:
    """The example replayed: every run reads and compiles its rules (nothing is kept between
    runs), so this is a timer's run and the first run after an install alike."""
    argv = sitscheck("run", "--from", str(EXAMPLE), "--output", "json=/dev/null")
    bare = best_of([PY, "-c", "pass"], repeat)
    sample = best_of(argv, repeat)
    return [
        Row(
            "replay: examples/h200x2-idle",
            f"{sample.wall_s:.2f} s, exit {sample.returncode}, {rss(sample)}",
            f"python -c pass {bare.wall_s * 1000:.0f} ms",
            "<= 0.9 s",
            sample.wall_s <= 0.9 and sample.max_rss_mb <= RSS_MB,
        ),
    ]


def bench_rules(scratch: Path, gpus: int) -> list[Row]:
    """The rules over a grown node, and over a quarter of it: the ratio shows the growth."""
    figures = {}
    for count in (gpus // 4, gpus):
        bundle = scratch / f"node{count}"
        large_node_bundle(BUNDLE, bundle, gpus=count, log_lines=20_000)
        done = subprocess.run(
            [PY, "-m", "benchmarks.rules_bench", str(bundle)],
            capture_output=True,
            text=True,
            check=False,
            cwd=ROOT,
        )
        figures[count] = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout else {}
    small, large = figures[gpus // 4], figures[gpus]
    growth = large.get("cpu_s", float("nan")) / max(small.get("cpu_s", 0.0), 1e-6)
    unknown = ", ".join(large.get("unknown") or []) or "none"
    return [
        Row(
            f"rules over a {gpus}-GPU bundle ({large.get('engine')})",
            f"{large.get('wall_s')} s wall, {large.get('cpu_s')} CPU-s; UNKNOWN: {unknown}",
            f"{gpus // 4} GPUs {small.get('cpu_s')} CPU-s (x{growth:.1f} for x4 GPUs)",
            "<= 3 s; linear in GPUs (pairs: n^2 data)",
            float(large.get("wall_s", 99)) <= 3.0,
        )
    ]


def bench_many_rules(scratch: Path) -> Row:
    """10,000 rules under --run-timeout 5: the report comes, the unfinished rules named."""
    folder = scratch / "rules10k"
    many_rules(folder, 10_000)
    report = scratch / "rules10k.json"
    argv = sitscheck("run", "--from", str(EXAMPLE), "--rules", str(folder), "--run-timeout", "5")
    sample = best_of([*argv, "--output", f"json={report}"], 1)
    unknown = 0
    if report.exists():
        verdicts = json.loads(report.read_text()).get("verdicts") or []
        unknown = sum(1 for v in verdicts if v.get("status") == "unknown")
    return Row(
        "10,000 rules at --run-timeout 5",
        f"{sample.wall_s:.2f} s, exit {sample.returncode}, {unknown} UNKNOWN, {rss(sample)}",
        "the run's deadline 5 s",
        "report within 5 s + 3 s",
        report.exists() and sample.wall_s <= 8.0,
    )


def bench_live(repeat: int, scratch: Path) -> list[Row]:
    if shutil.which("nvidia-smi") is None:
        return [
            Row("live run on GPUs", "skipped: no NVIDIA driver here", "-", "see RESULTS.md", True)
        ]
    raw = _raw_quick_check(scratch, repeat)
    sample = best_of(sitscheck("run", "--output", "json=/dev/null"), repeat)
    beyond = sample.wall_s - 3.0  # the default sampling window
    return [
        Row(
            "live run (default, 3 s sampling window) minus the window",
            f"{beyond:.2f} s ({sample.wall_s:.2f} s), {rss(sample)}",
            f"raw quick check (topo -m, dmon -s u -c 1, --query-gpu, dmesg | grep) {raw:.3f} s "
            f"(ratio {beyond / raw:.1f}x)",
            "<= 3x the raw commands",
            beyond <= 3 * raw and sample.max_rss_mb <= RSS_MB,
        )
    ]


def _raw_quick_check(scratch: Path, repeat: int) -> float:
    """The seed's quick check as its commands, one after the other (the dmesg output is
    grepped from a file: no shell)."""
    query = "--query-gpu=index,name,pci.bus_id,temperature.gpu,power.draw,utilization.gpu"
    commands = [
        ["nvidia-smi", "topo", "-m"],
        ["nvidia-smi", "dmon", "-s", "u", "-c", "1"],
        ["nvidia-smi", query, "--format=csv"],
    ]
    best = float("inf")
    for _ in range(repeat):
        total = sum(best_of(c, 1).wall_s for c in commands)
        log = scratch / "dmesg.out"
        with log.open("wb") as out:
            started = time.perf_counter()
            subprocess.run(["dmesg"], stdout=out, stderr=subprocess.DEVNULL, check=False)
            dmesg = time.perf_counter() - started
        total += dmesg + best_of([*GREP, str(log)], 1).wall_s
        best = min(best, total)
    return best


def byte_compiled(scratch: Path) -> None:
    """Every child runs sitscheck byte-compiled, as an install leaves it (pip compiles what it
    installs). Where the environment writes no bytecode (PYTHONDONTWRITEBYTECODE), each run
    would compile ~100 modules again (~0.15 s on 2 cores): the children then keep theirs in
    the scratch folder (PYTHONPYCACHEPREFIX, never beside tracked files), written by one
    warm-up of each kind of child before anything is measured."""
    if not os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
        return
    os.environ["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    for argv in (
        sitscheck("checks"),
        sitscheck("run", "--from", str(EXAMPLE), "--output", "json=/dev/null"),
        [PY, "-c", SCAN_CODE, os.devnull],
    ):
        subprocess.run(argv, check=False, capture_output=True, cwd=ROOT)


def main() -> int:
    repeat = int(os.environ.get("BENCH_REPEAT", "3"))
    size_mb = int(os.environ.get("BENCH_LOG_MB", "1024"))
    storm_mb = int(os.environ.get("BENCH_STORM_MB", "256"))
    ru_mb = int(os.environ.get("BENCH_RU_MB", "512"))
    gpus = int(os.environ.get("BENCH_GPUS", "256"))
    scratch = Path(os.environ.get("BENCH_DIR") or tempfile.mkdtemp(prefix="sitscheck-bench-"))
    scratch.mkdir(parents=True, exist_ok=True)
    byte_compiled(scratch)
    only = set(filter(None, os.environ.get("BENCH_ONLY", "").split(",")))
    rows: list[Row] = []

    def want(name: str) -> bool:
        return not only or name in only

    if want("startup"):
        rows += bench_startup(repeat, scratch)
    if want("replay"):
        rows += bench_replay_example(repeat)
    if want("whole"):
        whole, sample = bench_whole_run(scratch, repeat)
        rows += whole
        rows.append(bench_daemon_cpu(sample))
    if want("kernlog"):
        rows += bench_kernel_log(scratch, size_mb, repeat)
    if want("russian"):
        rows.append(bench_journal_ru(scratch, ru_mb, repeat))
    if want("storm"):
        rows.append(bench_storm(scratch, storm_mb, repeat))
    if want("rules"):
        rows += bench_rules(scratch, gpus)
        rows.append(bench_many_rules(scratch))
    if want("live"):
        rows += bench_live(repeat, scratch)
    width = max(len(r.name) for r in rows)
    print(f"{'benchmark':<{width}}  {'ok':<4} measured | reference | target")
    for row in rows:
        verdict = "yes" if row.ok else "NO"
        print(f"{row.name:<{width}}  {verdict:<4} {row.measured} | {row.reference} | {row.target}")
    if "BENCH_DIR" in os.environ:
        print(f"import-time profile: {scratch / 'importtime.txt'}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
