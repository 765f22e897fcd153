"""Hostile or inconsistent bundles and settings (issue #17): each is bounded, named where it
hits, and costs nothing else. FIFOs where files are expected, a tarball of zeros or of many
tiny files, JSON nested 200,000 deep, a meta.json contradicting its evidence, NaN and negative
counters, a kernel log with no line break read by `run --daemon`, timeouts of 1e300 or .inf.

What an operator's node would run: the installed `sitscheck` (where a hang is the fault), else
the same run in this process (`app.execute`, rules included).
"""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import msgspec
import pytest
from sitscheck.app import RunRequest, execute
from sitscheck.cli import app
from sitscheck.config import run_config
from sitscheck.models import CheckResult, Report, Status
from sitscheck.sources import artifacts as names
from sitscheck.sources.replay import ReplaySources
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tests" / "bundles" / "h200x2-idle-v0"
SITSCHECK = Path(sys.executable).with_name("sitscheck")
SLACK_S = 3.0  # "within --run-timeout plus a few seconds": start-up, rules, the report
DEEP = 200_000
GPU_CHECKS = ("driver", "gpu_telemetry", "memory_errors", "nvlink", "pcie_link", "topology")
SMI_OUTPUTS = (
    names.NVIDIA_SMI_L,
    names.NVIDIA_SMI_Q,
    names.NVIDIA_SMI_QUERY_GPU,
    names.NVIDIA_SMI_TOPO,
    names.NVIDIA_SMI_DMON,
)
RECORDING: dict[str, Any] = json.loads((BUNDLE / names.NVML_JSON).read_text())


def outline(check: CheckResult) -> tuple[str, list[str], bool]:
    return check.status.value, sorted(f.code for f in check.findings), check.error is None


def said(check: CheckResult) -> str:
    return "\n".join([check.error or "", check.skip_reason or "", *check.not_judged])


def replay(bundle: Path, **settings: Any) -> Report:
    return execute(RunRequest(run_config(settings), str(bundle)))


@pytest.fixture(scope="module")
def intact() -> Report:
    return replay(BUNDLE)


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    folder = tmp_path / "bundle"
    shutil.copytree(BUNDLE, folder)
    return folder


def assert_as_intact(report: Report, intact: Report, *except_for: str) -> None:
    assert [c.name for c in report.checks] == [c.name for c in intact.checks]
    for check in report.checks:
        if check.name not in except_for:
            assert outline(check) == outline(intact.check(check.name)), (check.name, said(check))  # type: ignore[arg-type]


def timed(argv: list[str], limit_s: float = 30, **kwargs: Any) -> tuple[Any, float]:
    began = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=limit_s, **kwargs)
    return done, time.monotonic() - began


# ---- FIFOs where files are expected ---------------------------------------------------------


def test_a_fifo_as_meta_json_gives_a_report_within_the_run_timeout_installed_cli(
    bundle: Path, tmp_path: Path, intact: Report
) -> None:
    (bundle / names.META_JSON).unlink()
    os.mkfifo(bundle / names.META_JSON)  # no writer: opening it for reading would wait forever
    target = tmp_path / "report.json"
    argv = [str(SITSCHECK), "run", "--from", str(bundle), "--run-timeout", "5"]
    done, elapsed = timed([*argv, "-o", f"json={target}"])

    assert elapsed < 5 + SLACK_S, f"{elapsed:.1f}s"
    report = msgspec.convert(json.loads(target.read_text()), Report)
    assert done.returncode == report.exit_code
    assert_as_intact(report, intact)  # the evidence is all there: only the claim is refused


def test_a_fifo_as_the_kernel_log_is_refused_naming_it(bundle: Path, intact: Report) -> None:
    (bundle / names.DMESG).unlink()
    os.mkfifo(bundle / names.DMESG)
    report = replay(bundle)
    for name in ("xid", "pcie_aer"):
        assert "dmesg.txt could not be read: not a regular file (a FIFO)" in said(
            report.check(name)  # type: ignore[arg-type]
        )
    assert_as_intact(report, intact, "xid", "pcie_aer")


def test_a_json_output_to_a_fifo_no_one_reads_is_named_and_the_rest_delivered_installed_cli(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    done, elapsed = timed(
        [str(SITSCHECK), "run", "--from", str(BUNDLE), "-o", f"json={fifo}", "-o", "text"]
    )
    assert elapsed < 10
    assert done.returncode == 3
    assert f"--output json={fifo}: a FIFO that no process reads" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert "checks:" in done.stdout  # the text report still went out


def test_a_fifo_as_the_textfile_is_named_installed_cli(tmp_path: Path) -> None:
    folder = tmp_path / "textfile"
    folder.mkdir()
    os.mkfifo(folder / "sitscheck.prom")
    done, elapsed = timed([str(SITSCHECK), "run", "--from", str(BUNDLE), "-o", f"prom={folder}"])
    assert elapsed < 10
    assert done.returncode == 3
    assert "a FIFO that no process reads" in done.stderr, done.stderr


# ---- tarballs: zeros, many members, deep members ----------------------------------------------


def tarball(
    path: Path,
    members: list[tuple[str, bytes]],
    source: Path | None = None,
    after: list[tuple[str, bytes]] | None = None,
) -> Path:
    """A .tar.gz of `members` (name, content), the folder `source` as `bundle/`, `after`."""
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name, data in members:
            _add(tar, name, data)
        if source is not None:
            tar.add(source, arcname="bundle")
        for name, data in after or []:
            _add(tar, name, data)
    return path


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def test_a_tarball_of_zeros_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """The issue's bomb: one member of 3.9 GiB of zeros (17 MB compressed). Its header alone
    is read: past the 1 GiB bound, refused; nothing written to TMPDIR."""
    header = tarfile.TarInfo("bundle/dmesg.txt")
    header.size = int(3.9 * 1024**3)
    archive = tmp_path / "zeros.tar"
    archive.write_bytes(header.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 1024)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    done, _ = timed(
        [str(SITSCHECK), "run", "--from", str(archive)], env={**os.environ, "TMPDIR": str(tmpdir)}
    )
    assert done.returncode == 3
    assert "unpacks to more than 1 GiB; refused" in done.stderr, done.stderr
    assert list(tmpdir.iterdir()) == []


def test_unpacking_past_the_run_deadline_is_unknown_named_and_the_report_written(
    tmp_path: Path, intact: Report
) -> None:
    """10,000 tiny members before the evidence, and a run deadline no unpacking of them can
    meet: every check UNKNOWN naming the unpacking; the report is written; TMPDIR emptied."""
    members = [(f"bundle/padding/{n:05d}.txt", b"x") for n in range(10_000)]
    archive = tarball(tmp_path / "many.tar.gz", members, BUNDLE)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    target = tmp_path / "report.json"
    argv = [str(SITSCHECK), "run", "--from", str(archive), "--run-timeout", "0.2"]
    done, elapsed = timed(
        [*argv, "-o", f"json={target}"], env={**os.environ, "TMPDIR": str(tmpdir)}
    )

    assert done.returncode == 3, done.stderr
    # what is left after the deadline (start-up, rules, the report, removing what was
    # unpacked) costs about what a whole replay of the bundle costs on this machine now:
    # measured, not assumed (the 100k-file tarball of the issue took 24 s)
    _, whole = timed([str(SITSCHECK), "run", "--from", str(BUNDLE), "-o", "json"])
    assert elapsed < 0.2 + whole + 2.5, (elapsed, whole)
    report = msgspec.convert(json.loads(target.read_text()), Report)
    assert report.status == Status.UNKNOWN and len(report.checks) == len(intact.checks)
    for check in report.checks:
        assert check.status == Status.UNKNOWN
        assert check.error is not None and check.error.startswith(
            "not started: the run's deadline had passed (unpacking "
        ), check.error
        assert "stopped at the run's deadline after" in check.error
    assert list(tmpdir.iterdir()) == []


def test_a_tarball_of_more_members_than_any_bundle_is_refused(tmp_path: Path) -> None:
    archive = tarball(tmp_path / "many.tar.gz", [(f"b/{n:05d}", b"") for n in range(20_001)])
    done, _ = timed([str(SITSCHECK), "run", "--from", str(archive)], limit_s=120)
    assert done.returncode == 3
    assert "holds more than 20000 members; refused" in done.stderr, done.stderr


def test_a_member_nested_200000_deep_is_skipped_and_costs_nothing_else(
    tmp_path: Path, intact: Report
) -> None:
    deep = "bundle/sysfs/" + "a/" * DEEP + "x"
    archive = tarball(tmp_path / "deep.tar.gz", [], BUNDLE, after=[(deep, b"1")])
    report = replay(archive)
    assert_as_intact(report, intact)


# ---- JSON nested 200,000 deep ------------------------------------------------------------------


def test_a_meta_json_nested_200000_deep_costs_nothing(bundle: Path, intact: Report) -> None:
    (bundle / names.META_JSON).write_text("[" * DEEP + "]" * DEEP)
    report = replay(bundle)  # was: RecursionError, the whole run lost
    assert_as_intact(report, intact)
    assert ReplaySources(bundle).meta() == {}
    assert "meta.json is not valid JSON (nested more than 64 levels deep" in (
        ReplaySources(bundle).driver().detail
    )


def test_an_nvml_json_nested_200000_deep_is_named_and_the_smi_files_read(
    bundle: Path, intact: Report
) -> None:
    (bundle / names.NVML_JSON).write_text('{"gpus": ' + "[" * DEEP + "]" * DEEP + "}")
    report = replay(bundle)
    assert len(report.checks) == len(intact.checks)
    for check in report.checks:
        assert "internal error" not in (check.error or ""), (check.name, check.error)
    assert "nvml.json: not valid JSON: nested more than 64 levels deep" in said(
        report.check("memory_errors")  # type: ignore[arg-type]
    )
    assert_as_intact(
        report,
        intact,
        "driver",
        "gpu_telemetry",
        "memory_errors",
        "nvlink",
        "pcie_link",
        "topology",
    )
    for name in ("driver", "memory_errors", "pcie_link"):  # judged from nvidia-smi's outputs
        assert report.check(name).status != Status.UNKNOWN, name  # type: ignore[union-attr]


# ---- a claim against the evidence; NaN and negative counters -----------------------------------


def test_meta_json_saying_no_driver_never_hides_the_gpus_evidence(bundle: Path) -> None:
    """meta.json says the driver is absent; nvml.json lists two GPUs, GPU 0 with 2 uncorrected
    ECC errors: the evidence wins, the run is CRITICAL (it was OK, exit 0, GPU checks
    skipped)."""
    recording = copy.deepcopy(RECORDING)
    recording["gpus"][0]["ecc"]["volatile"]["uncorrected"] = 2
    (bundle / names.NVML_JSON).write_text(json.dumps(recording))
    meta = json.loads((bundle / names.META_JSON).read_text())
    meta["nvidia_driver"] = {"state": "absent", "detail": "no NVIDIA driver on this machine"}
    (bundle / names.META_JSON).write_text(json.dumps(meta))

    report = replay(bundle)
    assert report.status == Status.CRITICAL and report.exit_code == 2, report.headline
    for name in GPU_CHECKS:
        assert report.check(name).status != Status.SKIPPED, name  # type: ignore[union-attr]
    driver = ReplaySources(bundle).driver()
    assert driver.state == "present"
    assert "meta.json says the driver is absent" in driver.detail


def test_nan_and_infinite_ecc_counts_are_not_recorded(bundle: Path) -> None:
    """NaN and Infinity (as Python's json writes them) are no reading, as `null` is: where the
    bundle holds nvidia-smi's outputs the count comes from them, else it is "not recorded"
    (it was: "internal error … cannot convert float NaN to integer")."""
    recording = copy.deepcopy(RECORDING)
    recording["gpus"][0]["ecc"]["volatile"]["uncorrected"] = float("nan")
    recording["gpus"][1]["ecc"]["aggregate"]["corrected"] = float("inf")
    (bundle / names.NVML_JSON).write_text(json.dumps(recording))
    memory = replay(bundle).check("memory_errors")
    assert memory is not None and memory.error is None, memory
    gpus = memory.facts["gpus"]
    assert gpus[0]["sources"] == {"ecc.volatile.uncorrected": "nvidia-smi"}
    assert gpus[1]["sources"] == {"ecc.aggregate.corrected": "nvidia-smi"}

    for name in SMI_OUTPUTS:
        (bundle / name).unlink()
    memory = replay(bundle).check("memory_errors")
    assert memory is not None and memory.error is None, memory
    text = said(memory)
    assert "GPU 0: ECC volatile uncorrected count: not recorded" in text, text
    assert "GPU 1: ECC aggregate corrected count: not recorded" in text, text


def test_a_negative_error_counter_is_invalid_input_named(bundle: Path) -> None:
    recording = copy.deepcopy(RECORDING)
    recording["gpus"][1]["ecc"]["volatile"]["corrected"] = -3
    (bundle / names.NVML_JSON).write_text(json.dumps(recording))
    snapshot, reason = ReplaySources(bundle).gpu_snapshot()
    assert snapshot is None
    assert reason is not None
    assert "nvml.json: gpus.1.ecc.volatile.corrected: must be at least 0" in reason
    # no nvidia-smi files to fall back on: the GPU checks are UNKNOWN, naming it
    for name in SMI_OUTPUTS:
        (bundle / name).unlink()
    memory = replay(bundle).check("memory_errors")
    assert memory is not None and memory.status == Status.UNKNOWN
    assert "gpus.1.ecc.volatile.corrected" in said(memory)


# ---- run --daemon on a kernel log with no line break -------------------------------------------


def test_run_daemon_reads_a_log_without_line_breaks_in_bounded_memory(
    bundle: Path, tmp_path: Path
) -> None:
    """256 MiB with no line break as dmesg.txt: `run --daemon` reads it line by line (from its
    cursor), through the same bounded reader as a plain run: each line kept to 64 KiB."""
    with (bundle / names.DMESG).open("wb") as handle:
        handle.truncate(256 * 1024 * 1024)  # sparse: NULs
    usual = daemon_run_peak(BUNDLE, tmp_path / "usual")  # the rules, the report: the same
    peak = daemon_run_peak(bundle, tmp_path / "state")
    assert peak < usual + 16 * 1024 * 1024, (
        f"{peak / 2**20:.0f} MiB traced, {usual / 2**20:.0f} usually"
    )


def daemon_run_peak(bundle: Path, state: Path) -> int:
    """The peak of Python's allocations during one `run --daemon --check xid` of `bundle`."""
    argv = ["run", "--daemon", "--from", str(bundle), "--state-dir", str(state)]
    tracemalloc.start()
    try:
        done = CliRunner().invoke(app, [*argv, "--check", "xid", "-o", "json"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert json.loads(done.stdout)["checks"][0]["name"] == "xid"
    return peak


# ---- settings ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1e300", ".inf", ".nan"])
def test_a_timeout_too_large_or_not_finite_is_refused_naming_the_key(
    value: str, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"check_timeout_s: {value}\n")
    done = CliRunner().invoke(app, ["run", "--from", str(BUNDLE), "--config", str(config)])
    assert done.exit_code == 3
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"sitscheck: {config}:1: check_timeout_s: "), (
        lines
    )
    assert "internal error" not in done.stderr


def test_a_timeout_option_too_large_is_refused_naming_the_key() -> None:
    done = CliRunner().invoke(app, ["run", "--from", str(BUNDLE), "--timeout", "1e300"])
    assert done.exit_code == 3
    assert "check_timeout_s: must be at most 86400" in done.stderr
