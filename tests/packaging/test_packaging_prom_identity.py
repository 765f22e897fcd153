"""A lost GPU keeps its identity (issue 29, item 13): its textfile labels, and every finding
about it, carry the UUID, model, bus id and host it had while it answered, from every source
that still knew it (the GPU outputs, sysfs, the daemon's last known inventory). An earlier
identity that contradicts this run's is never merged into it.

The node is the recorded 2×H200 `h200x2-idle-v0`; `faults/gpu-lost-gpu1` is the same node
with GPU 1 lost (NVML and nvidia-smi name it only by index and bus id). Runs go through the
CLI in timer mode (`run --daemon --state-dir`), as the shipped systemd timer runs them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sitscheck.cli import app
from sitscheck.export.inventory import Inventory
from sitscheck.gpu.resolve import resolve
from sitscheck.gpu.view import GpuFleet, GpuView
from sitscheck.models import Device, Report
from sitscheck.sources.hostname import node_name
from sitscheck.sources.replay import ReplaySources
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
HEALTHY = REPO / "tests" / "bundles" / "h200x2-idle-v0"
LOST = REPO / "tests" / "bundles" / "faults" / "gpu-lost-gpu1"
# the kernel log of GPU 1 falling off the bus (an AER fatal error, then Xid 79)
FALL = REPO / "tests" / "bundles" / "scenarios" / "xid79-aer-fatal-gpu1" / "dmesg.append.txt"
JOIN = ("gpu", "UUID", "pci_bus_id", "model_name", "Hostname")
GPU1 = {
    "gpu": "1",
    "UUID": "GPU-9f23e032-f1a8-da44-56dc-43ccc4c4bdba",  # h200x2-idle-v0's nvidia-smi -L
    "pci_bus_id": "00000000:00:07.0",
    "model_name": "NVIDIA H200",
    "Hostname": "vm",  # the bundles' meta.json
}
Series = list[tuple[str, dict[str, str], float]]


def run(bundle: Path, out: Path, state: Path | None = None) -> tuple[Series, Any]:
    """`sitscheck run --from BUNDLE [--daemon --state-dir STATE] -o prom -o json`: the
    textfile's samples and the JSON report."""
    out.mkdir()
    args = ["run", "--from", str(bundle), "-o", f"prom={out}", "-o", f"json={out}/r.json"]
    if state is not None:
        args += ["--daemon", "--state-dir", str(state)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code in (0, 1, 2), done.stdout + done.stderr
    text = (out / "sitscheck.prom").read_text()
    found = [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]
    return found, json.loads((out / "r.json").read_text())


def gpu_series(found: Series, gpu: str) -> Series:
    return [s for s in found if s[0].startswith("sitscheck_gpu_") and s[1].get("gpu") == gpu]


def series_set(found: Series, gpu: str) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """Each of the GPU's series: its name and labels."""
    return {(name, tuple(sorted(labels.items()))) for name, labels, _ in gpu_series(found, gpu)}


def identity(labels: dict[str, str]) -> dict[str, str]:
    return {k: labels[k] for k in JOIN if k in labels}


def finding(report: Any, code: str) -> Any:
    (found,) = [f for c in report["checks"] for f in c["findings"] if f["code"] == code]
    return found


def driver(report: Any) -> Any:
    (found,) = [c for c in report["checks"] if c["name"] == "driver"]
    return found


def fallen_node(tmp_path: Path) -> Path:
    """GPU 1 lost and fallen off the bus, as a live node shows it when nvidia-smi hangs: NVML
    (which cannot open the lost GPU, so names it by index only), sysfs, the kernel log."""
    bundle = tmp_path / "fallen"
    shutil.copytree(LOST, bundle)
    for output in bundle.glob("nvidia-smi-*"):
        output.unlink()
    with (bundle / "dmesg.txt").open("a", encoding="utf-8") as log:
        log.write(FALL.read_text(encoding="utf-8"))
    return bundle


def test_the_lost_gpu_keeps_the_labels_it_had_while_it_answered(tmp_path: Path) -> None:
    state = tmp_path / "state"
    healthy, _ = run(HEALTHY, tmp_path / "a", state)
    lost, report = run(LOST, tmp_path / "b", state)
    (before,) = [s for s in healthy if s[0] == "sitscheck_gpu_health_status" and s[1]["gpu"] == "1"]
    (after,) = [s for s in lost if s[0] == "sitscheck_gpu_health_status" and s[1]["gpu"] == "1"]
    assert before[1] == after[1] == GPU1  # one series: alerts and silences on its UUID hold
    assert (before[2], after[2]) == (0, 2)
    (gpu,) = [g for g in driver(report)["facts"]["gpus"] if g["index"] == 1]
    assert gpu["uuid"] == GPU1["UUID"] and gpu["name"] == "NVIDIA H200"
    assert gpu["sources"]["uuid"] == "last known inventory"  # said where it came from
    lost_finding = finding(report, "driver.gpu_lost")
    assert lost_finding["device"]["uuid"] == GPU1["UUID"]
    # OTLP: the GPU's hw.id (its health series and every event about it) is its UUID too
    inventory = Inventory.of(msgspec.convert(report, Report))
    device = msgspec.convert(lost_finding["device"], Device)
    assert inventory.device_attrs(device)["hw.id"] == GPU1["UUID"]


def test_every_gpu_series_has_one_label_set_across_healthy_and_lost_runs(tmp_path: Path) -> None:
    state = tmp_path / "state"
    healthy, _ = run(HEALTHY, tmp_path / "a", state)
    lost, _ = run(LOST, tmp_path / "b", state)
    for gpu in ("0", "1"):
        identities = {
            tuple(sorted(identity(labels).items()))
            for _, labels, _ in gpu_series(healthy, gpu) + gpu_series(lost, gpu)
        }
        assert len(identities) == 1, (gpu, identities)
        assert [k for k, _ in next(iter(identities))] == sorted(JOIN)
        before, after = series_set(healthy, gpu), series_set(lost, gpu)
        assert after <= before, after - before  # no new series: the same names, the same labels
    # the finding about the lost GPU is labelled as its health series is
    (lost_finding,) = [s for s in lost if s[0] == "sitscheck_finding" and s[1].get("gpu") == "1"]
    assert identity(lost_finding[1]) == GPU1


def test_the_fallen_off_the_bus_xid_names_the_gpu(tmp_path: Path) -> None:
    bundle = fallen_node(tmp_path)
    _, alone = run(bundle, tmp_path / "alone")  # no state: index and bus id, from sysfs
    xid = finding(alone, "xid.79")
    assert xid["device"]["index"] == 1
    assert xid["device"]["pci_bus_id"] == "0000:00:07.0"
    aer = finding(alone, "pcie_aer.uncorrected_fatal")
    assert aer["device"]["index"] == 1
    state = tmp_path / "state"
    run(HEALTHY, tmp_path / "a", state)
    found, report = run(bundle, tmp_path / "b", state)
    device = finding(report, "xid.79")["device"]
    assert device == {  # the GPU, whole: index, bus id, model, UUID
        "index": 1,
        "pci_bus_id": "0000:00:07.0",
        "name": "NVIDIA H200",
        "uuid": GPU1["UUID"],
    }
    (series,) = [s for s in found if s[0] == "sitscheck_finding" and s[1]["code"] == "xid.79"]
    assert identity(series[1]) == GPU1
    (health,) = [s for s in found if s[0] == "sitscheck_gpu_health_status" and s[1]["gpu"] == "1"]
    assert health[1] == GPU1 and health[2] == 2


def edit_state(state: Path, **changes: object) -> None:
    path = state / "state.json"
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_an_earlier_identity_that_contradicts_this_run_is_not_merged(tmp_path: Path) -> None:
    """The state says another model sat at GPU 1's bus id (the GPU was replaced): this run's
    GPU is not given that GPU's UUID, and the report says why."""
    state = tmp_path / "state"
    run(HEALTHY, tmp_path / "a", state)
    gpus = json.loads((state / "state.json").read_text())["gpus"]
    for gpu in gpus:
        if gpu["pci_bus_id"] == "0000:00:07.0":
            gpu.update(uuid="GPU-00000000-0000-0000-0000-0000000000aa", pci_device_id="233010de")
    edit_state(state, gpus=gpus)
    found, report = run(LOST, tmp_path / "b", state)
    (health,) = [s for s in found if s[0] == "sitscheck_gpu_health_status" and s[1]["gpu"] == "1"]
    assert "UUID" not in health[1] and "model_name" not in health[1]
    notes = " ".join(driver(report)["not_judged"])
    assert "pci_device_id '233010de' where this run reads '233510de'" in notes
    assert "another GPU, its identity not carried over" in notes
    others = [n for c in report["checks"] if c["name"] != "driver" for n in c["not_judged"]]
    assert not [n for n in others if "last known inventory" in n]  # the driver check's to say


def test_two_earlier_gpus_at_one_bus_id_are_not_merged(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run(HEALTHY, tmp_path / "a", state)
    gpus = json.loads((state / "state.json").read_text())["gpus"]
    twin = {**gpus[1], "uuid": "GPU-00000000-0000-0000-0000-0000000000bb"}
    edit_state(state, gpus=[*gpus, twin])
    found, report = run(LOST, tmp_path / "b", state)
    (health,) = [s for s in found if s[0] == "sitscheck_gpu_health_status" and s[1]["gpu"] == "1"]
    assert "UUID" not in health[1]
    assert "holds 2 GPUs there" in " ".join(driver(report)["not_judged"])


def test_the_state_of_another_node_is_not_used(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run(HEALTHY, tmp_path / "a", state)
    edit_state(state, host="another-node")
    found, _ = run(LOST, tmp_path / "b", state)
    (health,) = [s for s in found if s[0] == "sitscheck_gpu_health_status" and s[1]["gpu"] == "1"]
    assert "UUID" not in health[1]


def test_the_identity_is_kept_while_the_gpu_stays_lost(tmp_path: Path) -> None:
    """Each run saves what it knew: the third run (lost again) still knows the UUID, and a
    run whose driver check lists no GPU at all forgets nothing."""
    state = tmp_path / "state"
    run(HEALTHY, tmp_path / "a", state)
    run(LOST, tmp_path / "b", state)
    nothing = tmp_path / "no-gpus"
    shutil.copytree(LOST, nothing)
    for output in [*nothing.glob("nvidia-smi-*"), nothing / "nvml.json"]:
        output.unlink()
    run(nothing, tmp_path / "c", state)
    found, _ = run(LOST, tmp_path / "d", state)
    (health,) = [s for s in found if s[0] == "sitscheck_gpu_health_status" and s[1]["gpu"] == "1"]
    assert health[1] == GPU1
    remembered = json.loads((state / "state.json").read_text())["gpus"]
    assert {g["uuid"] for g in remembered} == {
        "GPU-3d593023-41d0-bcb0-fd5b-7849b655a02f",
        GPU1["UUID"],
    }


def test_sysfs_names_a_nameless_gpu_only_when_exactly_one_is_left(tmp_path: Path) -> None:
    """sysfs of the lost node shows two NVIDIA GPUs (00:06.0, 00:07.0)."""
    sources = ReplaySources(LOST, label=str(LOST))

    def view(index: int, bus: str | None) -> GpuView:
        data = {"index": index, "lost": {"state": "gpu_lost"}} if bus is None else {"index": index}
        return GpuView(index, {**data, **({"pci_bus_id": bus} if bus else {})}, "nvml", "x")

    one = resolve(sources, GpuFleet((view(0, "0000:00:06.0"), view(1, None)), "nvml", "x"))
    assert one.gpus[1].pci_bus_id == "0000:00:07.0" and one.gpus[1].sources["pci_bus_id"] == "sysfs"
    for gpus in (
        (view(0, None), view(1, None)),  # two nameless GPUs: which is which cannot be told
        (view(0, "0000:00:06.0"), view(1, None), view(2, "0000:00:08.0")),  # 3 listed, 2 in sysfs
        (view(0, "0000:00:09.0"), view(1, None)),  # a bus id sysfs does not show
    ):
        resolved = resolve(sources, GpuFleet(gpus, "nvml", "x"))
        assert [v.pci_bus_id for v in resolved.gpus] == [v.pci_bus_id for v in gpus]
    partial = GpuFleet((view(0, "0000:00:06.0"), view(1, None)), "nvml", "x", complete=False)
    assert resolve(sources, partial).gpus[1].pci_bus_id is None  # `-q -i N`: not every GPU


def test_a_bundle_without_a_host_has_no_hostname_label(tmp_path: Path) -> None:
    bundle = tmp_path / "nameless"
    shutil.copytree(HEALTHY, bundle)
    meta = json.loads((bundle / "meta.json").read_text())
    del meta["host"]
    (bundle / "meta.json").write_text(json.dumps(meta))
    found, _ = run(bundle, tmp_path / "out")
    assert not [s for s in found if "Hostname" in s[1]]
    assert gpu_series(found, "0")


@pytest.mark.parametrize(("env", "expected"), [("gpu-node-17", "gpu-node-17"), ("", None)])
def test_the_host_is_named_as_dcgm_exporter_names_it(
    monkeypatch: pytest.MonkeyPatch, env: str, expected: str | None
) -> None:
    """$NODE_NAME where set (a Kubernetes pod's downward API), else the host name."""
    import socket

    monkeypatch.setenv("NODE_NAME", env)
    assert node_name() == (expected or socket.gethostname())
