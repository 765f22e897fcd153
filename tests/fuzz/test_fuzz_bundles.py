"""Hostile node bundles: tarballs with any member names and types, a bundle folder whose files
are symlinks out of it, 10 GB (sparse) evidence files, a kernel log with no line breaks, and a
counter past what the rules engine's integers hold."""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.kernel_lines import candidate_lines
from fuzz_targets import BUNDLE, bundle_tar
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sitscheck.app import RunRequest, execute
from sitscheck.checks.pcie_aer.parse import AER_ANCHORS, HEAD_LINES
from sitscheck.checks.xid.parse import XID_ANCHORS
from sitscheck.config import RunConfig
from sitscheck.contract.evidence import gather
from sitscheck.contract.registry import discover
from sitscheck.sources import artifacts as names
from sitscheck.structs import json_text

EXAMPLES = int(os.environ.get("SITSCHECK_FUZZ_EXAMPLES", "150"))
SITSCHECK = Path(sys.executable).with_name("sitscheck")
TEN_GB = 10 * 1024**3
CHECKS = len(discover())  # every installed check is in every report

# ---- tarballs: any member names, any member types ---------------------------------------------

NAME_PARTS = ["bundle", "..", ".", "", "sysfs", "devices", "dmesg.txt", "nvml.json", "tensorrt"]
NAME_PARTS += ["meta.json", "nvidia-smi-L.txt", "a b", "\u00e9", "x" * 120, "~", "-", "*"]
KINDS = [
    tarfile.REGTYPE,
    tarfile.DIRTYPE,
    tarfile.SYMTYPE,
    tarfile.LNKTYPE,
    tarfile.CHRTYPE,
    tarfile.FIFOTYPE,
]
LINK_TARGETS = ["../../etc/passwd", "/etc/passwd", "dmesg.txt", "..", ".", "bundle/nvml.json"]

member_name = st.lists(st.sampled_from(NAME_PARTS), min_size=1, max_size=5).map("/".join) | (
    st.sampled_from(["/", "//etc/x", "/tmp/evil", "bundle/../../evil", "../evil"])
)
member = st.tuples(
    member_name,
    st.sampled_from(KINDS),
    st.sampled_from(LINK_TARGETS),
    st.binary(max_size=64),
)

# every command output the installed checks declare
DECLARED_FILES = tuple(gather(discover()).commands)


def tarball(members: list[tuple[str, bytes, str, bytes]], compress: bool) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz" if compress else "w") as tar:
        for name, kind, link, body in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            info.size = len(body) if kind == tarfile.REGTYPE else 0
            try:
                tar.addfile(info, io.BytesIO(body) if kind == tarfile.REGTYPE else None)
            except (ValueError, UnicodeError):
                continue  # a name tarfile itself cannot write
    return out.getvalue()


@settings(
    max_examples=EXAMPLES,
    deadline=3000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(members=st.lists(member, max_size=8), compress=st.booleans())
def test_any_tarball_is_refused_or_unpacked_inside_its_folder_only(
    members: list[Any], compress: bool
) -> None:
    bundle_tar(tarball(members, compress))


def test_a_member_claiming_ten_gigabytes_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    header = tarfile.TarInfo("bundle/dmesg.txt")
    header.size = TEN_GB
    archive = tmp_path / "bomb.tar"
    archive.write_bytes(header.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 1024)
    done = subprocess.run(
        [str(SITSCHECK), "run", "--from", str(archive)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        check=False,
    )
    assert done.returncode == 3
    assert "more than 1 GiB; refused" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.tar"]


# ---- a bundle folder whose files point out of it -----------------------------------------------

SECRET = "root:x:0:0:PLANTED-OUTSIDE-THE-BUNDLE:/root:/bin/bash"


def test_symlinks_out_of_a_bundle_folder_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (outside / "sysfs").mkdir()
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    for name in (*DECLARED_FILES, names.DMESG, names.NVML_JSON, names.META_JSON):
        (bundle / name).unlink()
        (bundle / name).symlink_to(outside / "secret.txt")
    shutil.rmtree(bundle / names.SYSFS_DIR)
    (bundle / names.SYSFS_DIR).symlink_to(outside / "sysfs")
    (bundle / "tensorrt").symlink_to(outside)
    (bundle / "inside.txt").write_text((BUNDLE / names.NVIDIA_SMI_L).read_text())

    report = execute(RunRequest(RunConfig(), str(bundle)))
    text = json_text(report)
    assert "PLANTED-OUTSIDE-THE-BUNDLE" not in text
    assert len(report.checks) == CHECKS
    driver = report.check("driver")
    assert driver is not None and driver.status.value == "skipped"
    assert "no NVIDIA driver evidence" in (driver.skip_reason or "")


def test_a_symlink_inside_the_bundle_is_followed(tmp_path: Path) -> None:
    """Control: a link that stays inside (hand-made bundles, sysfs's own links) still reads."""
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    (bundle / "copies").mkdir()
    (bundle / names.NVIDIA_SMI_L).rename(bundle / "copies" / "listing.txt")
    (bundle / names.NVIDIA_SMI_L).symlink_to(Path("copies") / "listing.txt")
    (bundle / names.NVML_JSON).unlink()
    report = execute(RunRequest(RunConfig(checks=["driver"]), str(bundle)))
    driver = report.check("driver")
    assert driver is not None and driver.facts["source"] == "nvidia-smi -L"
    assert driver.facts["gpu_count"] == 2


# ---- 10 GB evidence files (sparse: never written) ----------------------------------------------


def sparse(path: Path, size: int = TEN_GB) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.truncate(size)


def run_measured(argv: list[str], limit: int, timeout_s: float) -> tuple[int, str, float, int]:
    """Run under an address-space limit: (exit code, stdout, seconds, its peak RSS in bytes)."""

    def apply_limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    began = time.monotonic()
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=apply_limit
    )
    killer = threading.Timer(timeout_s, process.kill)
    killer.start()
    try:
        assert process.stdout is not None
        stdout = process.stdout.read().decode("utf-8", errors="replace")
        _, status, usage = os.wait4(process.pid, 0)  # this child's own peak, not the session's
    finally:
        killer.cancel()
        process.returncode = 0  # reaped above: keep Popen from waiting again
    took = time.monotonic() - began
    return os.waitstatus_to_exitcode(status), stdout, took, usage.ru_maxrss * 1024


@pytest.fixture
def huge_bundle(tmp_path: Path) -> Iterator[Path]:
    """Every evidence file but the kernel log 10 GB of NULs, a sysfs link file and a TensorRT
    log included (the kernel log's own case is below)."""
    bundle = tmp_path / "huge"
    for name in (*DECLARED_FILES, names.NVML_JSON, names.META_JSON):
        sparse(bundle / name)
    sparse(bundle / "tensorrt" / "build.log")
    device = bundle / names.SYSFS_DIR / "devices" / "pci0000:00" / "0000:00:06.0"
    for name in ("current_link_width", "vendor", "class", "aer_dev_correctable"):
        sparse(device / name)
    yield bundle
    shutil.rmtree(bundle)


def test_ten_gigabyte_evidence_files_cost_bounded_time_and_memory(huge_bundle: Path) -> None:
    argv = [str(SITSCHECK), "run", "--from", str(huge_bundle), "-o", "json"]
    argv += ["--timeout", "3", "--run-timeout", "5"]
    code, stdout, took, peak = run_measured(argv, limit=4 * 1024**3, timeout_s=60)
    report = json.loads(stdout)
    assert code in (0, 1, 2, 3) and len(report["checks"]) == CHECKS
    assert took < 20.0, f"took {took:.1f}s"
    # each artifact is read up to its 64 MiB cap, several at once: bounded, if generous
    assert peak < 1536 * 1024**2, f"peak RSS {peak >> 20} MiB"


def test_a_kernel_log_without_line_breaks_is_scanned_in_bounded_memory() -> None:
    chunk = b"\0" * (1024 * 1024)

    def chunks() -> Iterator[bytes]:
        for _ in range(48):  # 48 MiB with no line break
            yield chunk

    tracemalloc.start()
    try:
        list(candidate_lines(chunks(), AER_ANCHORS + XID_ANCHORS, HEAD_LINES))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, f"peak {peak >> 20} MiB for a 48 MiB line"


# ---- values past what the rules engine holds ---------------------------------------------------


def test_a_counter_past_int64_does_not_cost_the_report(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    (device,) = bundle.glob("sysfs/devices/*/0000:00:06.0")
    (device / "aer_dev_correctable").write_text(
        "RxErr 0\nBadTLP 0\nTOTAL_ERR_COR 18446744073709551615\n"
    )
    report = execute(RunRequest(RunConfig(), str(bundle)))
    assert len(report.checks) == CHECKS
