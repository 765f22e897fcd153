"""The bandwidth check's pure parts: link rates, the narrowest link, shared ports, NVLink paths,
the probe's record; and the probe started from sitscheck where this machine has no GPU."""

from __future__ import annotations

import copy
import ctypes.util
import json
import shutil
from pathlib import Path

import pytest
from bandwidth_bundles import RECORDED, TWO_H200
from sitscheck.app import RunRequest, execute, installed_evidence
from sitscheck.checks.bandwidth.check import BandwidthCheck
from sitscheck.checks.bandwidth.expect import narrowest, pcie_gbs, shared_ports
from sitscheck.checks.bandwidth.impl import NOT_ASKED, BandwidthImpl
from sitscheck.checks.bandwidth.peers import peer_paths
from sitscheck.checks.bandwidth.record import RecordError, parse_record
from sitscheck.checks.pcie_link.links import PortLink
from sitscheck.config import RunConfig
from sitscheck.contract.evidence import gather
from sitscheck.probes.bandwidth import BANDWIDTH_JSON
from sitscheck.probes.bandwidth.cuda import format_uuid
from sitscheck.sources.bundle_writer import open_bundle_writer
from sitscheck.sources.collect import collect_bundle
from sitscheck.sources.command import CommandRunner
from sitscheck.sources.live import LiveOptions, LiveSources
from sitscheck.workloads.bandwidth import is_record, run_probe

NO_CUDA = ctypes.util.find_library("cuda") is None
PROBE = BandwidthCheck.workload.module  # the bandwidth check's declared workload


def link(bus: str, role: str, width: int, gen: int) -> PortLink:
    return PortLink(bus, f"devices/{bus}", role, width, width, gen, gen)


def test_pcie_rates_are_the_seeds_quick_table() -> None:
    assert pcie_gbs(4, 16) == 31.5  # seed 000 §2.5: Gen4 x16 31.5 GB/s
    assert pcie_gbs(4, 8) == 15.8  # Gen4 x8 15.8 GB/s
    assert pcie_gbs(5, 16) == 63.0
    assert pcie_gbs(7, 16) is None and pcie_gbs(5, 0) is None


def test_the_narrowest_link_on_a_path_limits_the_gpu() -> None:
    chain = [
        link("0000:00:01.0", "port", 8, 5),  # a root port wired x8
        link("0000:01:00.0", "port", 16, 5),
        link("0000:02:00.0", "port", 16, 5),
        link("0000:03:00.0", "gpu", 16, 5),
    ]
    limit = narrowest(chain)
    assert limit is not None
    assert (limit.bus_id, limit.width, limit.theoretical_gbs) == ("0000:00:01.0", 8, 31.5)
    assert narrowest(chain[1:]) is not None and narrowest(chain[1:]).theoretical_gbs == 63.0  # type: ignore[union-attr]


def test_gpus_behind_switches_are_grouped_by_their_deepest_shared_port() -> None:
    root = link("0000:00:01.0", "port", 16, 5)
    chains = {}
    for index, (up, down) in enumerate(
        [("0000:01:00.0", "0000:02:00.0"), ("0000:01:00.0", "0000:02:01.0"),
         ("0000:05:00.0", "0000:06:00.0"), ("0000:05:00.0", "0000:06:01.0")]
    ):  # fmt: skip
        chains[index] = [
            root,
            link(up, "port", 16, 5),
            link(down, "port", 16, 5),
            link(f"0000:1{index}:00.0", "gpu", 16, 5),
        ]
    found = {(p.bus_id, p.gpus) for p in shared_ports(chains)}
    assert found == {
        ("0000:01:00.0", (0, 1)),
        ("0000:05:00.0", (2, 3)),
        ("0000:00:01.0", (0, 1, 2, 3)),
    }


def test_gpus_on_their_own_root_ports_share_nothing() -> None:
    chains = {i: [link(f"0000:00:0{6 + i}.0", "gpu", 16, 5)] for i in range(2)}
    assert shared_ports(chains) == []


def test_the_recorded_h200s_reach_each_other_over_18_nvlinks() -> None:
    snapshot = json.loads((TWO_H200 / "nvml.json").read_text())
    path = peer_paths(snapshot)[(0, 1)]
    active = [x for x in snapshot["gpus"][0]["nvlink"] if x["active"]]
    assert path.via == "nvlink" and path.links == len(active) == 18


def test_links_that_end_at_the_peer_count_as_the_pairs_own() -> None:
    snapshot = json.loads((TWO_H200 / "nvml.json").read_text())
    bridged = copy.deepcopy(snapshot)
    peer = bridged["gpus"][1]["pci_bus_id"]
    for number, entry in enumerate(bridged["gpus"][0]["nvlink"]):
        entry["remote_pci_bus_id"] = peer if number < 4 else "ffffffff:ff:ff.0"
    assert peer_paths(bridged)[(0, 1)].links == 4
    bridged["pairs"][0]["p2p_nvlink"] = False
    assert peer_paths(bridged)[(0, 1)].via == "pcie"
    assert peer_paths(None) == {}


def test_the_recorded_record_reads_as_recorded() -> None:
    raw = json.loads((RECORDED / BANDWIDTH_JSON).read_text())
    record = parse_record((RECORDED / BANDWIDTH_JSON).read_text())
    gpu = record.gpus[0]
    assert (gpu.uuid, gpu.h2d_gbs, gpu.d2h_gbs) == (
        raw["gpus"][0]["uuid"], raw["gpus"][0]["h2d"]["gbs"], raw["gpus"][0]["d2h"]["gbs"]
    )  # fmt: skip
    assert record.elapsed_s == raw["elapsed_s"] and record.errors == ()
    assert record.concurrent_h2d is None  # one GPU: no concurrent round


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"format": "other", "version": 1}', "is not 'sitscheck-bandwidth'"),
        ('{"format": "sitscheck-bandwidth", "version": 2}', "version 2"),
        ("{not json", "line 1: not valid JSON"),
        ('{"format": "sitscheck-bandwidth", "version": 1, "gpus": {}}', "`gpus`"),
        ('{"format": "sitscheck-bandwidth", "version": 1, "gpus": [{}]}', "`ordinal`"),
        ('{"format": "sitscheck-bandwidth", "version": 1, "errors": "x"}', "`errors`"),
        (
            '{"format": "sitscheck-bandwidth", "version": 1, "concurrent_h2d": {"gbs": {"a": 1}}}',
            "keyed by CUDA ordinal",
        ),
    ],
)
def test_a_record_of_another_shape_is_refused(text: str, words: str) -> None:
    with pytest.raises(RecordError, match=words.replace("(", r"\(")):
        parse_record(text)


def test_only_the_probes_json_counts_as_its_record() -> None:
    assert is_record((RECORDED / BANDWIDTH_JSON).read_text().strip())
    for text in ('{"format": "other", "version": 1}', "{not json", "Traceback (most recent", ""):
        assert not is_record(text)


def test_a_cuda_uuid_reads_as_nvidia_smi_prints_it() -> None:
    listed = (RECORDED / "nvidia-smi-L.txt").read_text().split("UUID: ")[1].rstrip(")\n")
    raw = bytes.fromhex(listed.removeprefix("GPU-").replace("-", ""))
    assert format_uuid(raw) == listed


def _live(tmp_path: Path, bandwidth_s: float | None) -> LiveSources:
    marker = tmp_path / "nvidiactl"
    marker.write_text("")
    options = LiveOptions(
        sys_root=str(tmp_path / "sys"),
        sample_seconds=0.0,
        bandwidth_s=bandwidth_s,
        driver_markers=(str(marker),),
    )
    return LiveSources(
        options, CommandRunner(path=str(tmp_path / "no-bin")), installed=installed_evidence
    )


def test_a_live_run_without_the_flag_neither_measures_nor_judges(tmp_path: Path) -> None:
    sources = _live(tmp_path, None)
    assert BandwidthImpl().applicable(sources, RunConfig()) == NOT_ASKED
    assert BandwidthImpl().applicable(sources, RunConfig(bandwidth=True)) is None
    assert BandwidthImpl().applicable(sources, RunConfig(load=True)) is None
    artifact = sources.artifact(BANDWIDTH_JSON)
    assert artifact.text is None and "--bandwidth" in (artifact.reason or "")


def test_the_probe_sees_only_the_gpus_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An acceptance phase's GPUs (UUIDs) are the probe child's CUDA_VISIBLE_DEVICES, which
    its record keeps (a real child: without libcuda it records why and what it was given);
    `--bandwidth` alone leaves the environment's own."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    sources = _live(tmp_path, 5.0)
    sources.options.bandwidth_gpus = ("GPU-2b73ad72-0000", "GPU-83543b48-0002")
    artifact = sources.artifact(BANDWIDTH_JSON)
    assert artifact.text is not None, artifact.reason
    record = json.loads(artifact.text)
    assert record["cuda_visible_devices"] == "GPU-2b73ad72-0000,GPU-83543b48-0002"
    sources.close()
    every = json.loads(run_probe(PROBE, 5.0).text or "{}")
    assert every["cuda_visible_devices"] is None


def test_no_gpu_left_to_load_starts_no_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sitscheck.workloads import bandwidth as probe

    def started(*args: object) -> None:
        raise AssertionError("the probe was started")

    monkeypatch.setattr(probe, "run_probe", started)
    sources = _live(tmp_path, 5.0)
    sources.options.bandwidth_gpus = ()
    artifact = sources.artifact(BANDWIDTH_JSON)
    assert artifact.text is None
    assert artifact.reason == (
        "not run: no GPU of its phase was left to load (each one's reason is its own)"
    )
    sources.close()


@pytest.mark.skipif(not NO_CUDA, reason="this machine has libcuda: the probe would measure")
def test_without_a_gpu_the_probe_records_why_and_the_bundle_replays_unknown(
    tmp_path: Path,
) -> None:
    artifact = run_probe(PROBE, 5.0)
    assert artifact.text is not None and is_record(artifact.text)
    assert "libcuda" in " ".join(json.loads(artifact.text)["errors"])
    sources = _live(tmp_path, 5.0)
    bundle = tmp_path / "bundle"
    with open_bundle_writer(bundle) as out:
        summary = collect_bundle(sources, out, gather([BandwidthCheck()]))
    sources.close()
    assert BANDWIDTH_JSON in summary["written"]
    # the recorded H200 with this failed probe's record in place of its own
    node = tmp_path / "node"
    shutil.copytree(RECORDED, node)
    shutil.copyfile(bundle / BANDWIDTH_JSON, node / BANDWIDTH_JSON)
    report = execute(RunRequest(RunConfig(), str(node)))
    result = report.check("bandwidth")
    assert result is not None and result.status.value == "unknown"
    assert "libcuda" in (result.error or "")
