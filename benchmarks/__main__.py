"""`python -m benchmarks`: every benchmark against a reference measured in the same run.

Environment: BENCH_LOG_MB (size of the kernel-log benchmark, default 1024),
BENCH_REPEAT (best of N, default 3), BENCH_DIR (scratch folder, default a temp dir).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .measure import Sample, best_of
from .synth import AER_REPORT, kernel_log, large_node_bundle

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "tests" / "bundles" / "h200x2-idle-v0"
PY = sys.executable


@dataclass(frozen=True)
class Row:
    name: str
    measured: str
    reference: str
    target: str
    ok: bool


def sitscheck(*args: str) -> list[str]:
    return [PY, "-m", "sitscheck", *args]


def bench_startup(repeat: int) -> list[Row]:
    bare = best_of([PY, "-c", "pass"], repeat)
    rows = []
    for args in (("--version",), ("checks",)):
        sample = best_of(sitscheck(*args), repeat)
        limit = 1.5 * bare.wall_s + 0.1
        rows.append(
            Row(
                f"start-up: sitscheck {' '.join(args)}",
                f"{sample.wall_s * 1000:.0f} ms",
                f"python -c pass {bare.wall_s * 1000:.0f} ms",
                f"<= 1.5x + 100 ms = {limit * 1000:.0f} ms",
                sample.wall_s <= limit,
            )
        )
    profile = subprocess.run(  # the slower of the two: every import of --version and more
        [PY, "-X", "importtime", "-m", "sitscheck", "checks"],
        capture_output=True,
        text=True,
        check=False,
    ).stderr
    (ROOT / "benchmarks" / "importtime.txt").write_text(profile)
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
    grep = best_of(["grep", "-cE", "AER|Xid|SXid", str(log)], repeat)
    scan_code = (
        "import sys; from pathlib import Path; "
        "from sitscheck.contract.registry import discover; "
        "from sitscheck.kernlog.scan import declared_interests, scan_file; "
        "scan_file(Path(sys.argv[1]), declared_interests(discover()))"
    )
    scan = best_of([PY, "-c", scan_code, str(log)], repeat)
    rows = [
        Row(
            f"kernel log: {size_mb} MB, few matches",
            f"{scan.wall_s:.2f} s, peak RSS {scan.max_rss_mb:.0f} MB",
            f"grep -E 'AER|Xid|SXid' {grep.wall_s:.2f} s (ratio {scan.wall_s / grep.wall_s:.2f}x)",
            "<= 3x grep, bounded memory",
            scan.wall_s <= 3 * grep.wall_s,
        )
    ]
    dense = scratch / "aer.log"
    lines = 100_000
    with dense.open("w") as out:
        for n in range(lines // len(AER_REPORT)):
            for row in AER_REPORT:
                out.write(row.format(t=n * 0.001, b=0x16, d=0x19) + "\n")
    sample = best_of([PY, "-c", scan_code, str(dense)], repeat)
    bare = best_of([PY, "-c", "pass"], repeat)
    rate = lines / max(sample.wall_s - bare.wall_s, 1e-6)
    rows.append(
        Row(
            "kernel log: 100k AER lines",
            f"{rate / 1000:.0f}k lines/s, peak RSS {sample.max_rss_mb:.0f} MB",
            f"python start-up {bare.wall_s * 1000:.0f} ms subtracted",
            ">= 200k lines/s",
            rate >= 200_000,
        )
    )
    return rows


def bench_live(repeat: int) -> list[Row]:
    if shutil.which("nvidia-smi") is None:
        return [
            Row("live run on GPUs", "skipped: no NVIDIA driver here", "-", "see RESULTS.md", True)
        ]
    sample = best_of(sitscheck("run", "--output", "json=/dev/null"), 1)
    return [
        Row(
            "live run (default, 3 s sampling window)",
            f"{sample.wall_s:.2f} s",
            "sampling window 3.00 s",
            "overshoot < 2 s",
            sample.wall_s - 3.0 < 2.0,
        )
    ]


def main() -> int:
    repeat = int(os.environ.get("BENCH_REPEAT", "3"))
    size_mb = int(os.environ.get("BENCH_LOG_MB", "1024"))
    scratch = Path(os.environ.get("BENCH_DIR") or tempfile.mkdtemp(prefix="sitscheck-bench-"))
    scratch.mkdir(parents=True, exist_ok=True)
    rows = bench_startup(repeat)
    whole, sample = bench_whole_run(scratch, repeat)
    rows += whole
    rows.append(bench_daemon_cpu(sample))
    rows += bench_kernel_log(scratch, size_mb, repeat)
    rows += bench_live(repeat)
    width = max(len(r.name) for r in rows)
    print(f"{'benchmark':<{width}}  {'ok':<4} measured | reference | target")
    for row in rows:
        verdict = "yes" if row.ok else "NO"
        print(f"{row.name:<{width}}  {verdict:<4} {row.measured} | {row.reference} | {row.target}")
    if "BENCH_DIR" not in os.environ:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
