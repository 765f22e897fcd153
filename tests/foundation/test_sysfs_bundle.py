"""PCI topology from sysfs (a bundle's resolved paths, live sysfs's symlinks) and confinement."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sitscheck.sources.files import FileTree
from sitscheck.sources.pci import device_path, nvidia_gpus, upstream_chain
from sitscheck.sources.replay import ReplaySources

ROOT_PORT = "0000:00:01.0"
SWITCH_UP = "0000:17:00.0"
SWITCH_DOWN = "0000:18:00.0"
GPU = "0000:19:00.0"
GPU_AUDIO = "0000:19:00.1"
NIC = "0000:1a:00.0"


def make_device(root: Path, path: str, vendor: str, klass: str) -> None:
    folder = root / path
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vendor").write_text(vendor + "\n")
    (folder / "class").write_text(klass + "\n")


@pytest.fixture
def live_sysfs(tmp_path: Path) -> Path:
    """A tree shaped like /sys: devices under pci0000:00, bus/pci/devices/BDF symlinks."""
    root = tmp_path / "sys"
    chain = f"devices/pci0000:00/{ROOT_PORT}/{SWITCH_UP}/{SWITCH_DOWN}"
    devices = {
        ROOT_PORT: (f"devices/pci0000:00/{ROOT_PORT}", "0x8086", "0x060400"),
        SWITCH_UP: (f"devices/pci0000:00/{ROOT_PORT}/{SWITCH_UP}", "0x1000", "0x060400"),
        SWITCH_DOWN: (chain, "0x1000", "0x060400"),
        GPU: (f"{chain}/{GPU}", "0x10de", "0x030200"),
        GPU_AUDIO: (f"{chain}/{GPU_AUDIO}", "0x10de", "0x040300"),
        NIC: (f"devices/pci0000:00/{ROOT_PORT}/{NIC}", "0x15b3", "0x020000"),
    }
    links = root / "bus" / "pci" / "devices"
    links.mkdir(parents=True)
    for bdf, (path, vendor, klass) in devices.items():
        make_device(root, path, vendor, klass)
        os.symlink(f"../../../{path}", links / bdf)
    return root


def test_bundle_sysfs_device_paths(bundle_dir: Path) -> None:
    sysfs = FileTree(bundle_dir / "sysfs", confined=True)
    assert device_path(sysfs, "0000:00:06.0") == "devices/pci0000:00/0000:00:06.0"
    assert device_path(sysfs, "0000:00:07.0".upper()) == "devices/pci0000:00/0000:00:07.0"
    assert device_path(sysfs, "0000:99:00.0") is None


def test_bundle_sysfs_nvidia_gpus(bundle_dir: Path) -> None:
    sysfs = FileTree(bundle_dir / "sysfs", confined=True)
    assert nvidia_gpus(sysfs) == ["0000:00:06.0", "0000:00:07.0"]
    assert (
        ReplaySources(bundle_dir).sysfs.read_text("devices/pci0000:00/0000:00:06.0/vendor")
        == "0x10de\n"
    )


@pytest.mark.parametrize("confined", [False, True])
def test_live_sysfs_follows_bus_symlinks(live_sysfs: Path, confined: bool) -> None:
    sysfs = FileTree(live_sysfs, confined=confined)
    path = device_path(sysfs, GPU)
    assert path == f"devices/pci0000:00/{ROOT_PORT}/{SWITCH_UP}/{SWITCH_DOWN}/{GPU}"
    assert upstream_chain(path) == [ROOT_PORT, SWITCH_UP, SWITCH_DOWN, GPU]
    assert device_path(sysfs, NIC) == f"devices/pci0000:00/{ROOT_PORT}/{NIC}"
    assert device_path(sysfs, "0000:99:00.0") is None


def test_live_sysfs_nvidia_gpus_are_display_controllers_only(live_sysfs: Path) -> None:
    # the GPU's HDMI audio function (NVIDIA, class 0x0403) and the NIC are not GPUs
    assert nvidia_gpus(FileTree(live_sysfs)) == [GPU]


def test_device_found_without_bus_links(live_sysfs: Path) -> None:
    """A hand-made tree with no bus/pci/devices links is searched under devices/."""
    for link in (live_sysfs / "bus" / "pci" / "devices").iterdir():
        link.unlink()
    sysfs = FileTree(live_sysfs)
    assert (
        device_path(sysfs, GPU) == f"devices/pci0000:00/{ROOT_PORT}/{SWITCH_UP}/{SWITCH_DOWN}/{GPU}"
    )
    assert nvidia_gpus(sysfs) == [GPU]


def test_upstream_chain_keeps_only_bus_ids() -> None:
    assert upstream_chain("devices/pci0000:00/0000:00:01.0/0000:19:00.0") == [
        "0000:00:01.0",
        "0000:19:00.0",
    ]
    assert upstream_chain("devices/platform/serial8250") == []


def test_confined_tree_refuses_a_symlink_out_of_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("root:x:0:0\n")
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "inside.txt").write_text("ok\n")
    os.symlink(outside, root / "escape")
    os.symlink(outside / "secret", root / "nvml.json")
    os.symlink("inside.txt", root / "alias.txt")

    confined = FileTree(root, confined=True)
    for name in ("escape/secret", "nvml.json", "../outside/secret"):
        assert confined.path(name) is None, name
        assert not confined.exists(name), name
        assert confined.read_text(name) is None, name
    assert confined.list_dir("escape") == []
    assert confined.read_text("alias.txt") == "ok\n"  # a link that stays inside is fine
    assert confined.read_text("/inside.txt") == "ok\n"  # absolute means under the root

    # the same tree unconfined (live /sys) does follow the links: the test above means something
    assert FileTree(root).read_text("escape/secret") == "root:x:0:0\n"


def test_replay_refuses_evidence_linked_from_outside(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text('{"format": "sitscheck-nvml", "gpus": []}')
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    os.symlink(outside, bundle / "nvml.json")
    snapshot, reason = ReplaySources(bundle).gpu_snapshot()
    assert snapshot is None
    assert reason is not None and "nvml.json" in reason
    assert ReplaySources(bundle).driver().state == "unknown"  # the refused link shows nothing


FOLDERS = ("sysfs", "proc", "files", "tensorrt")  # the trees a replay reads apart


@pytest.mark.parametrize("through", ["absolute", "relative", "symlinked"])
def test_a_bundles_folders_that_link_out_of_it_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, through: str
) -> None:
    """A bundle's `sysfs`, `proc`, `files` or `tensorrt` that is itself a link out of the
    bundle (to /sys, say) holds nothing, however the bundle is named; the same folders kept
    inside the bundle (a link to a folder of the bundle) are read."""
    outside = tmp_path / "outside"
    (outside / "devices").mkdir(parents=True)
    (outside / "devices" / "vendor").write_text("0x10de\n")
    (outside / "build.log").write_text("[TRT] [E] not this bundle's\n")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for folder in FOLDERS:
        os.symlink(outside, bundle / folder)
    kept = tmp_path / "kept"
    (kept / "data" / "devices").mkdir(parents=True)
    (kept / "data" / "devices" / "vendor").write_text("0x15b3\n")
    (kept / "data" / "build.log").write_text("[TRT] [W] this bundle's\n")
    for folder in FOLDERS:
        os.symlink("data", kept / folder)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "via").symlink_to(tmp_path, target_is_directory=True)
    name = {"absolute": str(tmp_path), "relative": ".", "symlinked": "via"}[through]

    hostile = ReplaySources(Path(name) / "bundle")
    for tree in (hostile.sysfs, hostile.procfs, hostile.files):
        assert tree.read_text("devices/vendor") is None
        assert tree.list_dir("devices") == [] and tree.glob("*/*") == []
    assert hostile.log_files("tensorrt") == []
    inside = ReplaySources(Path(name) / "kept")
    for tree in (inside.sysfs, inside.procfs, inside.files):
        assert tree.read_text("devices/vendor") == "0x15b3\n"
    assert [p.name for p in inside.log_files("tensorrt")] == ["build.log"]
    assert [p.parent.name for p in inside.log_files("tensorrt")] == ["tensorrt"]
