"""The installed plugin in whole runs: `sitscheck run --from BUNDLE` over the bundle recorded
with it (bundles/h200x2-fake-node, see corpus/SOURCES.md) and small edits of it: the BAR1
readings it recorded, a nearly full and a full aperture, a GPU without BAR1, a read that
failed, a value of the wrong shape, a bundle recorded without the plugin, a site param.

Runs only where the plugin is installed (its entry point is what makes sitscheck load it):
`pip install ./examples/plugins/bar1_memory` beside sitscheck.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from bar1_corpus import BUNDLE, MIB

pytestmark = pytest.mark.skipif(
    not any(e.name == "bar1_memory" for e in entry_points(group="sitscheck.checks")),
    reason="the plugin is not installed (pip install ./examples/plugins/bar1_memory)",
)
RULE = "bar1_memory.nearly_full"
Gpus = list[dict[str, Any]]


def _edited(folder: Path, edit: Callable[[Gpus], None] | None = None) -> Path:
    """The recorded bundle, its nvml.json's GPU records changed by `edit`."""
    shutil.copytree(BUNDLE, folder)
    if edit is not None:
        path = folder / "nvml.json"
        data = json.loads(path.read_text())
        edit(data["gpus"])
        path.write_text(json.dumps(data))
    return folder


def _run(bundle: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    out = bundle.parent / f"{bundle.name}.json"
    argv = [sys.executable, "-m", "sitscheck", "run", "--from", str(bundle), "-o", f"json={out}"]
    done = subprocess.run(
        [*argv, "--check", "bar1_memory", *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.exists(), done.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    return done.returncode, report


def _check(report: dict[str, Any]) -> dict[str, Any]:
    (check,) = [c for c in report["checks"] if c["name"] == "bar1_memory"]
    found: dict[str, Any] = check
    return found


def _verdicts(report: dict[str, Any]) -> dict[int | None, str]:
    """The rule's status per GPU it fired on (None: one verdict for the GPUs it did not)."""
    return {
        (v.get("device") or {}).get("index"): v["status"]
        for v in report["verdicts"]
        if v["rule"] == RULE
    }


def _used(gpu: int, used_mib: int) -> Callable[[Gpus], None]:
    def edit(gpus: Gpus) -> None:
        bar1 = gpus[gpu]["bar1_memory"]
        bar1["bar1Used"] = used_mib * MIB
        bar1["bar1Free"] = bar1["bar1Total"] - bar1["bar1Used"]

    return edit


def test_the_recorded_bundle_replays_its_readings(tmp_path: Path) -> None:
    code, report = _run(_edited(tmp_path / "b"))
    check = _check(report)
    assert check["status"] == "ok", check
    assert check["facts"]["source"] == "nvml.json"
    assert [
        (g["index"], g["pci_bus_id"], g["total_mib"], g["used_mib"]) for g in check["facts"]["gpus"]
    ] == [
        (0, "0000:00:06.0", 262144, 1),
        (1, "0000:00:07.0", 262144, 1),
    ]
    assert {m["name"] for m in check["metrics"]} == {
        "sitscheck.bar1_memory.used",
        "sitscheck.bar1_memory.total",
    }
    assert _verdicts(report) == {None: "ok"}
    assert (report["status"], code) == ("ok", 0)


def test_a_nearly_full_aperture_is_the_rules_warning(tmp_path: Path) -> None:
    code, report = _run(_edited(tmp_path / "b", _used(1, 250_000)))
    assert _check(report)["findings"] == []
    assert _verdicts(report) == {1: "warning"}
    (fired,) = [v for v in report["verdicts"] if v["rule"] == RULE and v["status"] == "warning"]
    assert fired["message"].startswith("GPU 1: BAR1 aperture 95.4 % mapped (250000 of 262144 MiB")
    assert (report["status"], code) == ("warning", 1)


def test_a_full_aperture_is_the_checks_finding_under_the_rule(tmp_path: Path) -> None:
    code, report = _run(_edited(tmp_path / "b", _used(0, 262_144)))
    (finding,) = _check(report)["findings"]
    assert finding["code"] == "bar1_memory.exhausted"
    assert (finding["severity"], finding["kind"]) == ("warning", "condition")
    assert finding["device"]["index"] == 0
    assert _verdicts(report) == {0: "warning"}
    assert (report["status"], code) == ("warning", 1)


def test_a_gpu_without_bar1_is_not_judged_and_never_zero(tmp_path: Path) -> None:
    def unsupported(gpus: Gpus) -> None:
        gpus[1]["bar1_memory"] = None
        gpus[1]["unavailable"]["bar1_memory"] = "not_supported"

    code, report = _run(_edited(tmp_path / "b", unsupported))
    check = _check(report)
    assert check["status"] == "ok"
    assert check["facts"]["gpus"][1] == {
        "index": 1,
        "pci_bus_id": "0000:00:07.0",
        "uuid": "GPU-9f23e032-f1a8-da44-56dc-43ccc4c4bdba",
        "name": "NVIDIA H200",
        "state": "not_supported",
    }
    assert check["not_judged"] == ["GPU 1: BAR1: not supported by this GPU or driver"]
    assert _verdicts(report) == {None: "ok"}
    assert code == 0


def test_a_read_that_failed_is_unknown_naming_the_call(tmp_path: Path) -> None:
    def failed(gpus: Gpus) -> None:
        gpus[1]["bar1_memory"] = None
        gpus[1]["unavailable"]["bar1_memory"] = "timeout"
        gpus[1]["failures"]["bar1_memory"] = (
            "nvmlDeviceGetBAR1MemoryInfo(handle) did not answer within 5.0 s"
        )

    code, report = _run(_edited(tmp_path / "b", failed))
    check = _check(report)
    assert check["status"] == "unknown"
    assert check["error"] == (
        "GPU 1: BAR1: the read overran its deadline "
        "(nvmlDeviceGetBAR1MemoryInfo(handle) did not answer within 5.0 s)"
    )
    assert _verdicts(report) == {None: "unknown"}  # it requires the check, which could not decide
    assert code == 3


def test_a_value_of_another_shape_is_unknown(tmp_path: Path) -> None:
    def garbled(gpus: Gpus) -> None:
        gpus[0]["bar1_memory"] = {"bar1Total": "a lot"}

    code, report = _run(_edited(tmp_path / "b", garbled))
    assert _check(report)["error"] == "GPU 0: BAR1: nvml.json holds no reading of its shape"
    assert code == 3


def test_a_bundle_recorded_without_the_plugin_skips_it(tmp_path: Path) -> None:
    def older(gpus: Gpus) -> None:
        for gpu in gpus:
            del gpu["bar1_memory"]

    _, report = _run(_edited(tmp_path / "b", older))
    check = _check(report)
    assert check["status"] == "skipped"
    assert check["skip_reason"] == (
        "nvml.json was recorded without bar1_memory (by a sitscheck without the check)"
    )


def test_a_site_raises_the_threshold_without_copying_the_rule(tmp_path: Path) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("params:\n  bar1_used_warning_percent: 99\n")
    code, report = _run(_edited(tmp_path / "b", _used(1, 250_000)), "--rules", str(site))
    assert _verdicts(report) == {None: "ok"}
    assert code == 0
