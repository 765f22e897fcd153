"""A rank of the multi-GPU phase's NCCL all-reduce (`python -I -m sitscheck.probes.nccl`), as the
phase starts it (an isolated child interpreter), where no GPU is needed: its options, the
folder it meets the other ranks in, and each way NCCL can be missing. NCCL missing is a result
whose figure is null with the reason (the phase is then UNKNOWN), never an error and never a
figure. PyTorch is replaced by small stand-in packages put first on the child's import path
(the child gets the parent's, `child_python`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sitscheck.probes.nccl import MODULE, STARTING
from sitscheck.probes.nccl.__main__ import arguments, check_rendezvous
from sitscheck.probes.nccl.allreduce import DEFAULT_BYTES, nvls_disabled
from sitscheck.sources import child_python

NO_TORCH = {"torch/__init__.py": "raise ImportError(\"No module named 'torch' (a test's)\")\n"}
CUDA = """
__version__ = "2.99.0+test"
class cuda:
    @staticmethod
    def is_available():
        return {available}
    @staticmethod
    def device_count():
        return {count}
"""
DISTRIBUTED = """
def is_available():
    return True
def is_nccl_available():
    return {nccl}
"""


def stand_in(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def torch_with(available: bool, count: int, nccl: bool = True) -> dict[str, str]:
    return {
        "torch/__init__.py": CUDA.format(available=available, count=count),
        "torch/distributed.py": DISTRIBUTED.format(nccl=nccl),
    }


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A folder of this user's alone, as the phase makes one."""
    folder = tmp_path / "home"
    folder.mkdir(mode=0o700)
    folder.chmod(0o700)
    return folder


def run_rank(*args: str) -> tuple[int | None, list[dict[str, Any]], str]:
    result = child_python.run(MODULE, args, 60.0)
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return result.returncode, lines, result.stderr


def rank_of(world: int, home: Path, rank: int = 0) -> list[str]:
    return ["--rank", str(rank), "--world", str(world), "--rendezvous", str(home / "store"),
            "--seconds", "5"]  # fmt: skip


@pytest.mark.parametrize(
    ("files", "world", "reason"),
    [
        (NO_TORCH, 2, "PyTorch is not installed (No module named 'torch' (a test's))"),
        (torch_with(available=False, count=0), 2, "PyTorch sees no CUDA device"),
        (torch_with(available=True, count=1), 2, "PyTorch sees 1 CUDA device(s) of the phase's 2"),
        (torch_with(available=True, count=8, nccl=False), 8, "PyTorch 2.99.0+test has no NCCL"),
    ],
    ids=["no-torch", "torch-without-cuda", "fewer-devices-than-ranks", "torch-without-nccl"],
)
def test_a_rank_without_nccl_says_why_and_measures_nothing(
    files: dict[str, str], world: int, reason: str, home: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.syspath_prepend(str(stand_in(tmp_path / "site", files)))
    code, lines, _ = run_rank(*rank_of(world, home))
    assert code == 0
    assert [line["event"] for line in lines] == ["doing", "result"]
    assert lines[0]["what"] == STARTING
    result = lines[-1]
    assert result["rank"] == 0 and result["nccl"] is None
    assert result["nccl_reason"].startswith(reason)


@pytest.mark.parametrize(
    "args",
    [
        ["--rank", "2", "--world", "2"],
        ["--rank", "-1", "--world", "2"],
        ["--rank", "0", "--world", "0"],
        ["--rank", "0", "--world", "two"],
        ["--rank", "0", "--world", "2", "--seconds", "0"],
        ["--rank", "0", "--world", "2", "--seconds", "nan"],
        ["--rank", "0", "--world", "2", "--bytes", "0"],
        ["--rank", "0", "--world", "2", "--inject", "bitflip"],
    ],
)
def test_a_wrong_option_is_a_usage_error(args: list[str], home: Path) -> None:
    full = [*args, "--rendezvous", str(home / "store")]
    if "--seconds" not in full:
        full += ["--seconds", "5"]
    code, lines, stderr = run_rank(*full)
    assert code == 2 and lines == []
    assert "usage: python -m sitscheck.probes.nccl" in stderr


def test_the_options_read_as_the_phase_writes_them(home: Path) -> None:
    args = arguments(rank_of(8, home, rank=7))
    assert (args.rank, args.world, args.seconds, args.bytes) == (7, 8, 5.0, DEFAULT_BYTES)
    assert args.rendezvous == str(home / "store") and args.inject is None


@pytest.mark.parametrize(
    ("mode", "words"),
    [(0o755, "mode 0755"), (0o1777, "mode 1777"), (0o770, "mode 0770")],
)
def test_a_rendezvous_others_could_write_or_read_is_refused(
    mode: int, words: str, tmp_path: Path
) -> None:
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(mode)
    code, lines, _ = run_rank(*rank_of(2, folder))
    assert code == 1
    assert [line["event"] for line in lines] == ["error"]
    assert words in lines[0]["reason"] and "this user's alone" in lines[0]["reason"]


def test_a_rendezvous_through_a_link_or_nowhere_is_refused(home: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(home)
    with pytest.raises(ValueError, match="a link or file"):
        check_rendezvous(str(link / "store"))
    with pytest.raises(ValueError, match="No such file or directory"):
        check_rendezvous(str(tmp_path / "missing" / "store"))
    with pytest.raises(ValueError, match="not an absolute path"):
        check_rendezvous("store")
    check_rendezvous(str(home / "store"))  # the phase's own folder: taken


def test_a_refused_rendezvous_is_refused_before_pytorch_is_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(stand_in(tmp_path / "site", NO_TORCH)))
    code, lines, _ = run_rank(*rank_of(2, Path("/tmp")))
    assert code == 1 and lines[-1]["event"] == "error"


@pytest.mark.parametrize(
    ("value", "disabled"),
    [("0", True), (" 0 ", True), ("1", False), ("2", False), ("", False), ("off", False)],
)
def test_nvls_is_off_only_where_nccl_nvls_enable_is_zero(value: str, disabled: bool) -> None:
    assert nvls_disabled({"NCCL_NVLS_ENABLE": value}) is disabled
    assert nvls_disabled({}) is False
