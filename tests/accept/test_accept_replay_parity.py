"""Replaying an acceptance bundle (`sitscheck run --from`): the phases' records are read back
into the memtest, compute and soak facts exactly as facts.md ("Acceptance checks") lists them,
the same whichever way the bundle is named (a relative path, a symlink, an absolute path, a
tarball).

The bundle is a real 1×H200 recording (tests/bundles/h200x1-bandwidth-v1: its passive evidence
and bandwidth probe record) with the acceptance records added as a run writes them
(`accept/*.json`), their figures those of a real H200 acceptance run: 128 GiB tested in two
passes of four patterns in 1.19 s; 71 bit-identical repeats of the seeded 8192³ bf16 GEMM at
687 TFLOP/s, 0.0039 off the fp64 tile; a 40 s soak at the 700 W cap (SW power cap alone, SM
1,440-1,530 MHz, 55 -> 61 °C, iterations of ~1.64 ms).
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
from accept_facts import COMPUTE_KEYS, ECC_KEYS, IDENTITY, MEMTEST_KEYS, SOAK_KEYS, SOAK_OBJECTS
from sitscheck.cli import app
from typer.testing import CliRunner

BUNDLE = Path(__file__).resolve().parent.parent / "bundles" / "h200x1-bandwidth-v1"
GPU = {"index": 0, "uuid": "GPU-4a39dba8-4474-f458-e55d-bdf60c2e6edb",
       "pci_bus_id": "0000:00:06.0", "name": "NVIDIA H200"}  # fmt: skip
ECC = {"volatile_corrected": 0, "volatile_uncorrected": 0, "remap_pending": False,
       "remap_failure": False, "retired_pages": 0}  # fmt: skip


def record(phase: str, engine: str | None, result: dict[str, Any] | None) -> str:
    entry = {**GPU, "status": "ok", "reason": None, "doing": f"{phase}: done", "seconds": 12.3,
             "result": result}  # fmt: skip
    return json.dumps({
        "format": "sitscheck-accept", "version": 1, "phase": phase, "engine": engine,
        "planned_s": 24.0, "started_at": "2026-12-02T01:15:09+00:00", "skipped": None,
        "gpus": [entry] if result is not None else [],
    }, indent=1)  # fmt: skip


def soak_result() -> dict[str, Any]:
    samples, times = [], []
    for t in range(42):
        boost = t < 3  # the first seconds: boost clocks, power climbing to the cap
        samples.append({
            "t": float(t), "sm_clock_mhz": 1980 if boost else (1440, 1485, 1530)[t % 3],
            "mem_clock_mhz": 3201, "power_w": 450.0 + 80 * t if boost else 690.0 + (t % 4),
            "power_limit_w": 700.0, "temp_c": min(55 + t // 5, 61), "mem_temp_c": 53,
            "clock_event_reasons": 0 if boost else 4,
        })  # fmt: skip
        if t:
            times.append([float(t), [1.62 + 0.01 * ((t + i) % 5) for i in range(600)]])
    return {
        "engine": "torch", "dtype": "bf16", "shape": [8192, 8192, 8192], "iterations": 24600,
        "digest_checks": 40, "digest_mismatches": [], "seconds": 39.222, "times": times,
        "samples": samples, "max_sm_clock_mhz": 1980,
        "violation_ns": {"power": [0, 37_000_000_000], "thermal": [0, 0]},
    }  # fmt: skip


RECORDS = {
    "accept/memtest.json": record("memtest", "ptx", {
        "bytes_tested": 137592045568, "patterns": ["address", "walking_ones", "inversions",
        "random"], "passes": 2, "bad_words": 0, "first_bad": None, "seconds": 1.189,
        "gbs": 925.4, "ecc_before": ECC, "ecc_after": ECC,
    }),
    "accept/compute.json": record("compute", "torch", {
        "engine": "torch", "dtype": "bf16", "shape": [8192, 8192, 8192], "repeats": 71,
        "mismatched": [], "digest": "45b692eb637d213d",
        "reference_max_rel_error": 0.003881445523748192, "reference_tolerance": 0.0156,
        "tflops_median": 687.1, "seconds": 12.1,
    }),
    "accept/soak.json": record("soak", "torch", soak_result()),
    "accept/bandwidth.json": json.dumps({
        "format": "sitscheck-accept", "version": 1, "phase": "bandwidth", "engine": "ptx",
        "planned_s": 18.0, "started_at": "2026-12-02T01:17:40+00:00", "skipped": None,
        "gpus": [], "probe": "python -I -m sitscheck.probes.bandwidth", "measured": True,
        "reason": None,
    }),
}  # fmt: skip


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    folder = tmp_path / "h200x1-accept"
    shutil.copytree(BUNDLE, folder)
    (folder / "accept").mkdir()
    for name, text in RECORDS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def replay(location: str) -> tuple[int, dict[str, Any]]:
    done = CliRunner().invoke(app, ["run", "--from", location, "-o", "json"])
    assert done.stdout.lstrip().startswith("{"), done.stdout + done.stderr
    return done.exit_code, json.loads(done.stdout)


def accept_checks(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    wanted = ("memtest", "compute", "soak", "bandwidth")
    return {c["name"]: c for c in report["checks"] if c["name"] in wanted}


def test_the_records_replay_into_facts_md_exactly(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(bundle.parent)
    code, report = replay(bundle.name)  # a relative path
    found = accept_checks(report)
    assert {n: c["status"] for n, c in found.items()} == {
        "memtest": "ok", "compute": "ok", "soak": "ok", "bandwidth": "ok"}  # fmt: skip
    for name, keys in (("memtest", MEMTEST_KEYS), ("compute", COMPUTE_KEYS), ("soak", SOAK_KEYS)):
        facts = found[name]["facts"]
        assert set(facts) == {"engine", "gpus"}, name
        (gpu,) = facts["gpus"]
        assert set(gpu) == keys, (name, set(gpu) ^ keys)
        assert {k: gpu[k] for k in IDENTITY} == {
            "gpu": 0, "uuid": GPU["uuid"], "pci_bus_id": GPU["pci_bus_id"]}  # fmt: skip
    memtest = found["memtest"]["facts"]["gpus"][0]
    assert set(memtest["ecc_before"]) == set(memtest["ecc_after"]) == ECC_KEYS
    assert memtest["bytes_tested"] == 137592045568 and memtest["passes"] == 2
    assert found["memtest"]["facts"]["engine"] == "ptx"
    compute = found["compute"]["facts"]
    assert compute["engine"] == "torch"
    assert compute["gpus"][0]["digest"] == "45b692eb637d213d"
    assert compute["gpus"][0]["matches_node"] is None  # one GPU: not applicable, not passed
    assert compute["gpus"][0]["mismatched_repeats"] == []  # the repeats that differed: none
    soak = found["soak"]["facts"]["gpus"][0]
    for key, keys in SOAK_OBJECTS.items():
        assert set(soak[key]) == keys, key
    # the samples taken under load (t 0-39 of its 39.2 s; the sampler's last two came after)
    assert soak["samples"] == 40 and soak["steady_from_s"] == 5.0
    assert soak["reasons_s"]["sw_power_cap"] == 37.0 and soak["reasons_s"]["hw_slowdown"] == 0
    assert soak["sm_clock_mhz"] == {"median": 1485.0, "p5": 1440.0, "min": 1440.0}
    assert soak["temp_c"]["max"] == 61.0
    assert 600 < soak["tflops"]["median"] < 700
    assert code == 0 and report["status"] == "ok"


def test_a_bundle_replays_alike_by_relative_path_symlink_absolute_path_and_tarball(
    bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = tmp_path / "link"
    link.symlink_to(bundle, target_is_directory=True)
    tarball = tmp_path / "h200x1-accept.tar.gz"
    with tarfile.open(tarball, "w:gz") as out:
        out.add(bundle, arcname=bundle.name)
    monkeypatch.chdir(tmp_path)
    seen = {}
    for how, location in (("relative", bundle.name), ("symlink", "link"),
                          ("absolute", str(bundle)), ("tarball", tarball.name)):  # fmt: skip
        code, report = replay(location)
        seen[how] = (code, report["status"], {  # the facts but bandwidth's (they name the path)
            n: (c["status"], c["facts"] if n != "bandwidth" else None, c["error"], c["findings"])
            for n, c in accept_checks(report).items()})  # fmt: skip
    assert seen["relative"][2]["soak"][0] == "ok"
    for how in ("symlink", "absolute", "tarball"):
        assert seen[how] == seen["relative"], how
    assert os.path.islink(link)


def bandwidth_record(**fields: Any) -> str:
    return json.dumps({**json.loads(RECORDS["accept/bandwidth.json"]), **fields})


def test_a_skipped_bandwidth_phase_replays_as_skipped_and_the_headline_says_so(
    bundle: Path,
) -> None:
    (bundle / "bandwidth.json").unlink()
    (bundle / "accept" / "bandwidth.json").write_text(
        bandwidth_record(skipped="--skip bandwidth", engine=None, probe=None, measured=False)
    )
    code, report = replay(str(bundle))
    found = accept_checks(report)["bandwidth"]
    assert found["status"] == "skipped" and found["skip_reason"] == "--skip bandwidth"
    assert "accepted without bandwidth" in report["headline"]
    assert code == 0


def test_a_bandwidth_phase_whose_probe_did_not_run_replays_unknown_never_ok(
    bundle: Path,
) -> None:
    (bundle / "bandwidth.json").unlink()
    (bundle / "accept" / "bandwidth.json").write_text(
        bandwidth_record(measured=False, reason="the probe printed no record")
    )
    code, report = replay(str(bundle))
    found = accept_checks(report)["bandwidth"]
    assert found["status"] == "unknown"
    assert found["error"].startswith("bandwidth probe: ")
    assert code == 3 and report["status"] == "unknown"


@pytest.mark.slow
def test_an_acceptance_collected_on_the_fake_node_replays_to_the_same_verdicts(
    tmp_path: Path,
) -> None:
    """`accept --collect DIR` on the fake 2×H200 node (NVML recorded, no CUDA: the children
    fail), then `run --from DIR`: the same acceptance verdicts, reasons and exit code."""
    from test_accept_cli import accept, fake_node

    collected = tmp_path / "collected"
    code, live, _, _ = accept(fake_node(tmp_path, driver=True), "--budget", "60", "--collect",
                              str(collected))  # fmt: skip
    assert sorted(p.name for p in (collected / "accept").iterdir()) == [
        "bandwidth.json", "compute.json", "memtest.json", "multigpu.json", "soak.json"]  # fmt: skip
    replayed_code, replayed = replay(str(collected))

    def verdicts(report: dict[str, Any]) -> dict[str, Any]:
        found = {
            **accept_checks(report),
            "multigpu": next(c for c in report["checks"] if c["name"] == "multigpu"),
        }
        return {n: (c["status"], c["error"], c["skip_reason"], c["findings"],
                    {k: v for k, v in c["facts"].items() if k != "ref"})  # the artifact's path
                for n, c in found.items()}  # fmt: skip

    assert verdicts(replayed) == verdicts(live)
    assert {v[0] for v in verdicts(live).values()} == {"unknown"}
    assert (replayed_code, replayed["status"]) == (code, live["status"]) == (3, "unknown")
