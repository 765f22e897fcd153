"""`BundleWriter`, the one way `collect` writes a bundle: what it refuses and what it leaves."""

from __future__ import annotations

import os
import tarfile
import tempfile
from pathlib import Path

import pytest
from sitscheck.errors import ConfigError, WriteError
from sitscheck.sources.bundle_writer import check_target, open_bundle_writer


def test_a_log_is_copied_and_a_fifo_refused_without_waiting(tmp_path: Path) -> None:
    log, fifo = tmp_path / "build.log", tmp_path / "fifo.log"
    log.write_text("[TRT] ok\n")
    os.mkfifo(fifo)  # no writer: opening it for reading the usual way would wait forever
    target = tmp_path / "bundle"
    with open_bundle_writer(target) as out:
        out.copy_file("tensorrt/00-build.log", log)
        with pytest.raises(WriteError, match=r"fifo\.log: not a regular file"):
            out.copy_file("tensorrt/01-fifo.log", fifo)
    assert (target / "tensorrt/00-build.log").read_text() == "[TRT] ok\n"
    assert out.written == ["tensorrt/00-build.log"]


def test_a_path_that_climbs_out_of_the_bundle_is_refused(tmp_path: Path) -> None:
    with open_bundle_writer(tmp_path / "bundle") as out:
        for bad in ("../escaped", "sysfs/../../escaped", ""):
            with pytest.raises(ValueError, match="not a path inside a bundle"):
                out.write_text(bad, "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]


def test_a_tarball_that_failed_midway_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    target = tmp_path / "out" / "node.tgz"
    with pytest.raises(RuntimeError, match="stopped"):
        with open_bundle_writer(target) as out:
            out.write_text("meta.json", "{}")
            raise RuntimeError("stopped")
    assert not target.exists() and list((tmp_path / "out").iterdir()) == []
    assert list((tmp_path / "tmp").iterdir()) == []  # its private folder is gone


def test_a_tarball_path_made_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "node.tar.gz"
    with pytest.raises(WriteError, match="made by another process while collecting"):
        with open_bundle_writer(target) as out:
            out.write_text("meta.json", "{}")
            target.write_text("someone else's\n")
    assert target.read_text() == "someone else's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node.tar.gz"]


def test_a_tarball_holds_one_folder_named_after_it(tmp_path: Path) -> None:
    target = tmp_path / "node.tgz"
    with open_bundle_writer(target) as out:
        out.write_text("sysfs/class/x", "1\n")
    with tarfile.open(target, "r:gz") as tar:
        assert tar.getnames() == ["node", "node/sysfs", "node/sysfs/class", "node/sysfs/class/x"]
    with pytest.raises(ConfigError, match="already exists; give a new tarball path"):
        with open_bundle_writer(target):
            pass


def test_check_target_finds_what_the_writer_refuses_and_writes_nothing(tmp_path: Path) -> None:
    """`check_target` (accept --collect, before its run) refuses what `open_bundle_writer`
    refuses, with the same words, and accepts a new path, an empty folder or a new tarball
    without making anything."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "empty", target_is_directory=True)
    (tmp_path / "taken.tgz").write_text("")
    (tmp_path / "file").write_text("")
    for name in ("new/deeper/bundle", "empty", "new.tar.gz", "new/b.tgz"):
        check_target(tmp_path / name)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "empty", "file", "full", "link", "taken.tgz"
    ]  # fmt: skip
    for name, why in (
        ("full", "the folder is not empty"),
        ("link", "a symbolic link; give the folder itself"),
        ("file", "not a folder"),
        ("taken.tgz", "already exists; give a new tarball path"),
        ("file/bundle", f"{tmp_path / 'file'} is not a folder"),
        ("file/b.tar.gz", f"{tmp_path / 'file'} is not a folder"),
    ):
        target = tmp_path / name
        with pytest.raises(ConfigError) as checked:
            check_target(target, "accept --collect")
        assert str(checked.value).startswith(f"accept --collect {target}: {why}"), name
        if name.startswith("file/"):
            continue  # the writer fails there too, in the words of the system call
        with pytest.raises(ConfigError) as opened, open_bundle_writer(target):
            pass
        assert str(opened.value) == str(checked.value).replace("accept --collect", "collect")
