"""`sitscheck collect` as root into a folder others can write: a link planted before the run or
raced in after its emptiness check is never followed (its target is not overwritten, the run
stops naming it); what it writes is 0640 in folders 0750 whatever the umask; `collect X.tar.gz`
writes a gzip tarball that `run --from` reads as it reads the folder."""

from __future__ import annotations

import json
import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sitscheck.app as app_module
from fault_node import install, make_node
from sitscheck.cli import app
from sitscheck.errors import WriteError
from sitscheck.sources.bundle_writer import open_bundle_writer
from typer.testing import CliRunner, Result

SECRET = "root's own file, 0600\n"


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The live node is a fake 2xH200 (recorded commands, NVML, sysfs and kernel log)."""
    install(make_node(tmp_path), monkeypatch.setattr)


def collect(*args: str) -> Result:
    return CliRunner().invoke(app, ["collect", *args, "--sample-seconds", "0.2"])


@pytest.fixture
def victims(tmp_path: Path) -> tuple[Path, Path]:
    """A root-owned 0600 file and an empty folder that a planted link points at."""
    victim, folder = tmp_path / "victim", tmp_path / "victim-folder"
    victim.write_text(SECRET)
    victim.chmod(0o600)
    folder.mkdir()
    return victim, folder


def untouched(victims: tuple[Path, Path]) -> bool:
    victim, folder = victims
    return victim.read_text() == SECRET and list(folder.iterdir()) == []


def one_line_exit_3(done: Result, *needles: str) -> None:
    assert done.exit_code == 3, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and all(needle in lines[0] for needle in needles), done.stderr


# ---- a link planted before the run --------------------------------------------------------


@pytest.mark.usefixtures("node")
def test_a_link_in_the_folder_at_the_start_is_refused(
    tmp_path: Path, victims: tuple[Path, Path]
) -> None:
    target = tmp_path / "bundle"
    target.mkdir()
    (target / "meta.json").symlink_to(victims[0])
    one_line_exit_3(collect(str(target)), str(target), "not empty")
    assert untouched(victims)


@pytest.mark.parametrize("name", ["bundle", "bundle.tar.gz"])
@pytest.mark.usefixtures("node")
def test_a_target_that_is_a_link_is_refused(
    name: str, tmp_path: Path, victims: tuple[Path, Path]
) -> None:
    target = tmp_path / name
    target.symlink_to(victims[1] if name == "bundle" else victims[0])
    one_line_exit_3(collect(str(target)), str(target))
    assert untouched(victims)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".bundle")] == []


# ---- a link raced in between the emptiness check and the writes ---------------------------

# One of each way collect writes: the NVML snapshot, a command's output, the streamed kernel
# log, the meta file written last, a folder (a link to one; a real folder holding a link).
RACED = ["nvml.json", "nvidia-smi-q.txt", "dmesg.txt", "meta.json", "sysfs", "sysfs/bus"]


@pytest.mark.parametrize("name", RACED)
@pytest.mark.usefixtures("node")
def test_a_link_raced_in_after_the_check_is_never_followed(
    name: str, tmp_path: Path, victims: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "bundle"
    target.mkdir(mode=0o777)  # an empty folder another user can write
    real = app_module.live_sources

    def planting(*args: Any, **kwargs: Any) -> Any:  # after the check, before any write
        pointee = victims[1] if name.startswith("sysfs") else victims[0]
        (target / name).parent.mkdir(exist_ok=True)
        (target / name).symlink_to(pointee)
        return real(*args, **kwargs)

    monkeypatch.setattr(app_module, "live_sources", planting)
    one_line_exit_3(collect(str(target)), str(target), name.split("/")[0], "already there")
    assert untouched(victims)
    assert (target / name).is_symlink()  # left as it was found


def test_a_folder_swapped_for_a_link_midway_is_never_followed(
    tmp_path: Path, victims: tuple[Path, Path]
) -> None:
    target = tmp_path / "bundle"
    with pytest.raises(WriteError, match="sysfs/b is already there"):
        with open_bundle_writer(target) as out:
            out.write_text("sysfs/class/a", "first\n")
            (target / "sysfs").rename(tmp_path / "moved")
            (target / "sysfs").symlink_to(victims[1])
            out.write_text("sysfs/b", "second\n")
    assert untouched(victims)
    (target / "sysfs").unlink()
    (target / "sysfs").mkdir()  # another folder of the same name: not the one it made
    with pytest.raises(WriteError, match="sysfs/c is already there"):
        with open_bundle_writer(tmp_path / "other") as out:
            out.write_text("sysfs/a", "first\n")
            (tmp_path / "other" / "sysfs").rename(tmp_path / "moved-again")
            (tmp_path / "other" / "sysfs").mkdir()
            out.write_text("sysfs/c", "second\n")
    assert list((tmp_path / "other" / "sysfs").iterdir()) == []


# ---- modes whatever the umask ---------------------------------------------------------------


@pytest.fixture(params=[0o000, 0o077], ids=["umask-000", "umask-077"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


def modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode) for p in root.rglob("*")}


@pytest.mark.usefixtures("node", "umask")
def test_folders_are_0750_and_files_0640_whatever_the_umask(tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper" / "bundle"
    done = collect(str(target))
    assert done.exit_code == 0, done.stdout + done.stderr
    found = modes(tmp_path / "new")
    assert "deeper/bundle/dmesg.txt" in found and "deeper/bundle/sysfs" in found, found
    for path, mode in found.items():
        wanted = 0o750 if (tmp_path / "new" / path).is_dir() else 0o640
        assert mode == wanted, f"{path} {oct(mode)}"
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o750


@pytest.mark.usefixtures("node", "umask")
def test_a_tarball_and_its_members_are_private_whatever_the_umask(tmp_path: Path) -> None:
    target = tmp_path / "node.tar.gz"
    done = collect(str(target))
    assert done.exit_code == 0, done.stdout + done.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    with tarfile.open(target, "r:gz") as tar:
        members = tar.getmembers()
    assert {m.name.split("/")[0] for m in members} == {"node"}
    assert "node/dmesg.txt" in {m.name for m in members}
    for member in members:
        assert member.isdir() or member.isfile(), member.name
        assert member.mode == (0o750 if member.isdir() else 0o640), member.name
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".node")) == []


# ---- a tarball replays as the folder does ---------------------------------------------------


def report(bundle: Path, into: Path) -> tuple[int, list[dict[str, Any]]]:
    """The exit code and each check's result, with the bundle's own path made `BUNDLE`."""
    done = CliRunner().invoke(app, ["run", "--from", str(bundle), "-o", f"json={into}"])
    text = into.read_text().replace(str(bundle), "BUNDLE")
    checks = json.loads(text)["checks"]
    return done.exit_code, [{k: v for k, v in c.items() if k != "duration_s"} for c in checks]


@pytest.mark.usefixtures("node")
def test_a_collected_tarball_replays_as_the_collected_folder(tmp_path: Path) -> None:
    """The tarball holds what a folder collected from the same node holds, and replays as
    that evidence does as a folder (its own members unpacked: the same report, exactly)."""
    folder, tarball = tmp_path / "bundle", tmp_path / "bundle.tar.gz"
    for target in (folder, tarball):
        done = collect(str(target))
        assert done.exit_code == 0, done.stdout + done.stderr
        assert f" files to {target}\n" in done.stdout, done.stdout
    assert tarball.is_file() and tarfile.is_tarfile(tarball)
    unpacked = tmp_path / "unpacked"
    with tarfile.open(tarball, "r:gz") as tar:
        names = {m.name.removeprefix("bundle/") for m in tar.getmembers() if m.isfile()}
        tar.extractall(unpacked, filter="data")
    assert names == {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
    from_tarball = report(tarball, tmp_path / "tarball.json")
    assert from_tarball == report(unpacked / "bundle", tmp_path / "unpacked.json")
    from_folder = report(folder, tmp_path / "folder.json")
    assert [c["status"] for c in from_tarball[1]] == [c["status"] for c in from_folder[1]]
    assert from_folder[0] == 0 and [c["status"] for c in from_folder[1]].count("ok") >= 5
