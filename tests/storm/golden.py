"""The kernel-log checks' outputs before the streaming change, for the old-vs-new test.

`python tests/storm/golden.py OUT.json` writes, from the code it runs with:

- per recorded bundle (`engine_snapshot.bundles`: tests/bundles, the scenarios materialised,
  examples/, the idle node grown to 8 and 24 GPUs): the report's status, exit code and headline,
  the verdicts (rule, status, GPU, message, reason: the fired ones whole, all as a digest);
  the pcie_aer and xid checks whole (status, error, findings, metrics, facts with the storm
  fields, which were already in the new form, not_judged), the other checks as their status
  and a digest of the rest;
- per storm of `storms.STAMPS` (3,000 mixed AER and Xid reports, each time form), the same
  replay record as the `dmesg.txt` of the recorded 2×H200 idle bundle, the two checks only
  (of the 1,000 events kept, the first 20 whole and a digest of all);
- per corpus sample (aer and xid, shared and own): the parser's whole event list
  (`parse_aer` / `parse_xid`), and the same replay record of the sample as the `dmesg.txt` of
  the recorded 2×H200 idle bundle, the pcie_aer and xid checks only.

Timing fields (`duration_s`, `started_at`) and the scratch folders' paths are left out.
`tests/storm/test_golden.py` compares the code under test with `data/golden.json`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
for extra in (TESTS / "rules", TESTS / "corpus", TESTS):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from corpus_sets import roots  # noqa: E402
from engine_snapshot import ADDED_FACTS, bundles  # noqa: E402
from storms import STAMPS, storm  # noqa: E402

GOLDEN = HERE / "data" / "golden.json"
KERNEL_CHECKS = ("pcie_aer", "xid")
BASE = TESTS / "bundles" / "h200x2-idle-v1"
STORM_REPORTS = 3000  # `storms.storm`: about 2,400 AER and 600 Xid/SXid reports
# What came after the golden file (issue 30's `sitscheck accept`): its checks, their rules and
# the bandwidth check's NCCL and peer-refusal rules, left out of a record only where they did
# not run (a check skipped) or did not fire (a rule ok or skipped); a later check that ran or a
# later rule that fired stays in, and the comparison fails. Facts fields added since:
# `engine_snapshot.ADDED_FACTS`.
LATER_CHECKS = ("memtest", "compute", "soak", "multigpu")
LATER_RULES = frozenset({
    "bandwidth.nccl_allreduce_low", "bandwidth.nccl_allreduce_ring_low", "bandwidth.p2p_refused",
    "compute.tflops_low", "soak.hw_slowdown", "soak.iteration_jitter", "soak.power_below_limit",
    "soak.temp_high", "soak.temp_rising", "soak.tflops_low", "soak.tflops_of_peak",
    *(f"straggler.{figure}{level}" for level in ("", "_critical") for figure in (
        "compute_tflops", "h2d_bandwidth", "hbm_bandwidth", "memtest_throughput",
        "soak_iteration_p99", "soak_tflops")),
})  # fmt: skip


def _scrub(value: Any, folder: Path) -> Any:
    text = json.dumps(value, sort_keys=True, default=str).replace(str(folder), "<bundle>")
    return json.loads(text)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def record(folder: Path, checks: tuple[str, ...] = ()) -> dict[str, Any]:
    """One replay of `folder`, less its timing fields."""
    from sitscheck.app import RunRequest, execute
    from sitscheck.config import RunConfig

    report = execute(RunRequest(RunConfig(checks=list(checks)), str(folder)))
    verdicts = [
        [v.rule, v.status.value, v.device.index if v.device else None, v.message, v.reason]
        for v in report.verdicts
        if not (v.rule in LATER_RULES and v.status.value in ("ok", "skipped"))
    ]
    skipped = {c.name for c in report.checks if c.status.value == "skipped"}
    later = skipped.intersection(LATER_CHECKS)
    total = len(report.checks)
    out: dict[str, Any] = {
        "status": report.status.value,
        "exit_code": report.exit_code,
        "headline": report.headline.replace(
            f" of {total} checks ran", f" of {total - len(later)} checks ran"
        ),
        # the fired ones whole, all of them as a digest
        "verdicts": [v for v in verdicts if v[1] not in ("ok", "skipped")],
        "verdicts_digest": _digest(_scrub(verdicts, folder)),
        "checks": {},
    }
    for check in report.checks:
        if check.name in later:
            continue
        # `series` (an active check's trace) came after the golden file; no kernel check has one
        body = check.model_dump(mode="json", exclude={"duration_s", "series"})
        added = ADDED_FACTS.get(check.name, {})
        body["facts"] = {
            k: v for k, v in body["facts"].items() if not (k in added and v == added[k])
        }
        if check.name in KERNEL_CHECKS:
            out["checks"][check.name] = body
        else:
            out["checks"][check.name] = [body["status"], _digest(_scrub(body, folder))]
    scrubbed: dict[str, Any] = _scrub(out, folder)
    return scrubbed


def corpus_samples() -> Iterator[tuple[str, str, Path]]:
    for corpus_set, root in roots().items():
        for kind in ("aer", "xid"):
            for sample in sorted((root / kind).glob("*.txt")):
                yield f"{corpus_set}/{kind}/{sample.name}", kind, sample


def sample_record(kind: str, sample: Path, scratch: Path) -> dict[str, Any]:
    from sitscheck.checks.pcie_aer.parse import parse_aer
    from sitscheck.checks.xid.parse import parse_xid
    from sitscheck.kernlog.lines import iter_kernel_lines

    parse = parse_aer if kind == "aer" else parse_xid
    lines = sample.read_text(errors="replace").splitlines()
    events = [e.to_fact() for e in parse(iter_kernel_lines(lines))]
    folder = scratch / "sample"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(BASE, folder)
    shutil.copyfile(sample, folder / "dmesg.txt")
    return {"events": events, "replay": record(folder, KERNEL_CHECKS)}


def storm_record(stamp: str, scratch: Path) -> dict[str, Any]:
    folder = scratch / f"storm-{stamp}"
    shutil.copytree(BASE, folder)
    storm(folder / "dmesg.txt", STORM_REPORTS, STAMPS[stamp])
    out = record(folder, KERNEL_CHECKS)
    for check in KERNEL_CHECKS:  # the 1,000 events kept: the first 20 whole, all as a digest
        facts = out["checks"][check]["facts"]
        facts["events"] = {"first": facts["events"][:20], "digest": _digest(facts["events"])}
    return out


def golden() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        return {
            "bundles": {name: record(path) for name, path in bundles(root / "b").items()},
            "storms": {stamp: storm_record(stamp, root) for stamp in STAMPS},
            "corpus": {
                name: sample_record(kind, sample, root) for name, kind, sample in corpus_samples()
            },
        }


def main(out: Path, made_by: str) -> None:
    data = {"made_by": made_by, **golden()}
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "unknown")
