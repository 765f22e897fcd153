"""A negative error counter printed by nvidia-smi (issue #17): invalid input, refused and
named for what reads it, never a reading. The recorded 2×H200 bundle replayed with one count
edited, in each of the outputs a count is read from (`--query-gpu` CSV, `-q`); the NVML
path (nvml.json) is refused at its schema (tests/security, `…negative_error_counter…`)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from fault_expect import result, said
from fault_node import BUNDLE
from sitscheck.app import RunRequest, execute
from sitscheck.config import run_config
from sitscheck.models import Report, Status
from sitscheck.sources import artifacts as names


def replayed(bundle: Path) -> Report:
    return execute(RunRequest(run_config({}), str(bundle)))


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    copy = tmp_path / "bundle"
    shutil.copytree(BUNDLE, copy)
    (copy / names.NVML_JSON).unlink()  # the counts come from nvidia-smi's outputs
    return copy


def test_a_negative_ecc_count_in_the_csv_is_refused_naming_the_field(bundle: Path) -> None:
    csv = bundle / names.NVIDIA_SMI_QUERY_GPU
    lines = csv.read_text().splitlines()
    assert lines[2].endswith(", 0, 0, 0, 0")  # GPU 1; its last four cells are the ECC counts
    lines[2] = lines[2][: -len("0, 0, 0, 0")] + "0, -3, 0, 0"
    csv.write_text("\n".join(lines) + "\n")
    (bundle / names.NVIDIA_SMI_Q).unlink()  # no other count of it to fall back on

    memory = result(replayed(bundle), "memory_errors")
    assert memory.status == Status.UNKNOWN, said(memory)
    assert "ecc.errors.uncorrected.volatile.total: '-3' is negative, not a count" in said(memory)
    assert "GPU 1" in said(memory)


def test_a_negative_ecc_count_in_query_q_is_refused_naming_it(bundle: Path) -> None:
    q = bundle / names.NVIDIA_SMI_Q
    text = q.read_text()
    first = re.search(r"(Volatile\n(?:.*\n)*?\s+DRAM Uncorrectable\s+: )0", text)
    assert first is not None
    q.write_text(text[: first.start(0)] + first.group(1) + "-3" + text[first.end(0) :])
    for name in (names.NVIDIA_SMI_QUERY_GPU, names.NVIDIA_SMI_DMON):
        (bundle / name).unlink()

    memory = result(replayed(bundle), "memory_errors")
    assert memory.status == Status.UNKNOWN, said(memory)
    assert "is negative, not a count; refused" in said(memory), said(memory)
    assert "GPU 0" in said(memory)
