"""Each check's facts model against what the check really returns, and what the engine builds.

Outputs: every recorded bundle (tests/bundles, tests/gpu/bundles, the fault bundles), every
scenario (tests/rules/rule_scenarios.py), and one-file bundles of real samples of the shared
corpus (tests/corpus/shared: a `--query-gpu` CSV, a `topo -m` matrix, a kernel log with Xid or
AER reports, a TensorRT build log); one recorded bundle with sysfs AER counter files in the
format the kernel documents. Each output's facts must validate strictly against its check's
model; each declared field must be seen in some output (or be listed, with why, in UNSEEN);
the per-GPU records and the activation the rules engine builds must hold only declared paths.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from accept_bundles import facts_variants as accept_variants
from bandwidth_bundles import facts_variants
from corpus_paths import SHARED_CORPUS
from infiniband.ib_tree import fact_bundles as ib_fact_bundles
from multigpu_bundles import fact_bundles as multigpu_fact_bundles
from rule_scenarios import BUNDLES, materialise, names
from sitscheck.app import RunRequest, open_sources
from sitscheck.config import RunConfig
from sitscheck.contract.evidence import gather
from sitscheck.contract.facts import FactsModel
from sitscheck.contract.registry import discover, select
from sitscheck.contract.runner import run_checks
from sitscheck.contract.settings import check_settings
from sitscheck.engine.evaluate import build_activation, gpu_views
from sitscheck.engine.fact_schema import Shape, activation, facts_model, facts_schema
from sitscheck.engine.profile_schema import ProfileSchema
from sitscheck.models import CheckResult

TESTS = BUNDLES.parent
CHECKS = [c for c in discover() if hasattr(c, "layer")]
BUILT_IN = sorted(c.name for c in CHECKS if type(c).__module__.startswith("sitscheck.checks."))
# The format of the sysfs AER counter files, as the kernel documents them
# (https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats).
AER_DEV_CORRECTABLE = (
    "Receiver Error 2\nBad TLP 0\nBad DLLP 0\nRELAY_NUM Rollover 0\nReplay Timer Timeout 0\n"
    "Advisory Non-Fatal 0\nCorrected Internal Error 0\nHeader Log Overflow 0\nTOTAL_ERR_COR 2\n"
)
AER_DEV_FATAL = (
    "Undefined 0\nData Link Protocol 0\nSurprise Down Error 0\nPoisoned TLP 0\n"
    "Flow Control Protocol 0\nCompletion Timeout 0\nCompleter Abort 0\nUnexpected Completion 0\n"
    "Receiver Overflow 0\nMalformed TLP 0\nECRC 0\nUnsupported Request 0\nACS Violation 0\n"
    "Uncorrectable Internal Error 0\nMC Blocked TLP 0\nAtomicOp Egress Blocked 0\n"
    "TLP Prefix Blocked Error 0\nTOTAL_ERR_FATAL 0\n"
)
# TensorRT's INT8 warning for a tensor without a calibration scale, as a real build printed it
# (https://github.com/NVIDIA/TensorRT/issues/2462).
INT8_BUILD = "".join(
    f"[2022-11-08 06:01:58 WARNING] Missing scale and zero-point for tensor {tensor}, expect "
    "fall back to non-int8 implementation for any layer consuming or producing given tensor\n"
    for tensor in (768, 492, 771)
)
# What a probe build's facts hold (`probe.GpuProbe.to_fact`, its log a `parse.TrtLog`).
PROBE_BUILD_FACTS = (
    *(".index", ".pci_bus_id", ".name", ".status", ".reason", ".duration_s"),
    *(".log.file", ".log.trt_version", ".log.built_on.gpu", ".log.built_on.sm"),
    *(".log.fallbacks[].layer", ".log.fallbacks[].reason", ".log.precision_fallbacks[].layer"),
    *(".log.precision_fallbacks[].from", ".log.precision_fallbacks[].to", ".log.errors[]"),
    *(".log.warnings", ".log.layers", ".log.fused", ".log.build_time_s"),
    *(".log.peak_memory_mib", ".log.truncated"),
)
# Declared facts no recorded or corpus output holds, and why; each is still the check's own
# output (the tests named assert it where one exists).
UNSEEN = {
    "bandwidth": {
        ".probe.errors[]": "a failed probe: tests/bandwidth records one where libcuda is absent",
    },
    "driver": {
        ".disagreements[]": "no recorded node's sources disagree (tests/gpu/test_gpu_fusion.py)",
        ".gpus_on_bus[]": "only where no driver serves the GPUs (tests/faults/test_fault_driver)",
    },
    "memory_errors": {
        ".gpus[].retired_sbe": "page retirement is pre-Ampere (V100/T4): no such GPU recorded",
        ".gpus[].retired_dbe": "page retirement is pre-Ampere (V100/T4): no such GPU recorded",
        ".gpus[].retired_pending": "page retirement is pre-Ampere (V100/T4): no such GPU recorded",
    },
    "infiniband": {
        ".ignored_ports[]": "only from check_config.infiniband.ignore_ports (tests/infiniband)",
    },
    "pcie_link": {
        ".gpus[].sysfs_vanished": "a device folder vanishing mid-read (tests/faults)",
    },
    "tensorrt": {
        f".probe.gpus[]{path}": "probe builds run live with TensorRT only (tests/tensorrt)"
        for path in PROBE_BUILD_FACTS
    },
}


def _bundles() -> list[Path]:
    recorded = [p for p in sorted(BUNDLES.glob("h200x*")) if p.is_dir()]
    recorded += sorted(p for p in (BUNDLES / "faults").iterdir() if p.is_dir())
    recorded += sorted(p for p in (TESTS / "gpu" / "bundles").iterdir() if p.is_dir())
    return recorded


def _corpus_bundles(root: Path, target: Path) -> Iterator[tuple[Path, list[str]]]:
    """One-file bundles of the corpus' real samples, and the checks that read them."""
    corpus = SHARED_CORPUS
    kinds = (
        ("smi/*query-gpu-csv*.txt", "nvidia-smi-query-gpu.csv", None),
        ("topo/*.txt", "nvidia-smi-topo-m.txt", ["topology"]),
        ("xid/*.txt", "dmesg.txt", ["xid", "pcie_aer"]),
        ("aer/*.txt", "dmesg.txt", ["xid", "pcie_aer"]),
        ("trt/*.txt", "tensorrt/sample.log", ["tensorrt"]),
    )
    for pattern, name, checks in kinds:
        for sample in sorted(corpus.glob(pattern)):
            folder = target / f"{sample.parent.name}-{sample.stem}"
            (folder / name).parent.mkdir(parents=True)
            shutil.copyfile(sample, folder / name)
            yield folder, checks or BUILT_IN


def _with_aer_counters(target: Path) -> Path:
    """The recorded idle bundle with AER counter files in each GPU's sysfs folder."""
    bundle = target / "aer-counters"
    shutil.copytree(BUNDLES / "h200x2-idle-v1", bundle)
    for width in sorted((bundle / "sysfs").rglob("current_link_width")):
        folder = width.parent
        if folder.is_dir():
            (folder / "aer_dev_correctable").write_text(AER_DEV_CORRECTABLE)
            (folder / "aer_dev_nonfatal").write_text(AER_DEV_FATAL.replace("FATAL", "NONFATAL"))
            (folder / "aer_dev_fatal").write_text(AER_DEV_FATAL)
            for kind, count in (("cor", 2), ("nonfatal", 0), ("fatal", 0)):
                (folder / f"aer_rootport_total_err_{kind}").write_text(f"{count}\n")
    return bundle


def _int8_logs(target: Path) -> Path:
    bundle = target / "trt-int8"
    shutil.copytree(BUNDLES / "h200x2-idle-v1", bundle)
    (bundle / "tensorrt").mkdir()
    (bundle / "tensorrt" / "int8.log").write_text(INT8_BUILD)
    return bundle


def _gpus_missing_from_the_matrix(target: Path) -> Path:
    """The recorded 4-GPU node with the 2-GPU node's matrix: GPUs 2 and 3 are not in it."""
    bundle = target / "topo-missing"
    shutil.copytree(BUNDLES / "h200x4-idle", bundle)
    topo = "nvidia-smi-topo-m.txt"
    shutil.copyfile(BUNDLES / "h200x2-idle-v1" / topo, bundle / topo)
    return bundle


def check_results(bundle: Path, checks: list[str], **config: Any) -> list[CheckResult]:
    """The checks' results for a bundle, as a run makes them (no rules)."""
    settings = RunConfig(checks=checks, **config)
    selected = select(discover(), settings.checks, settings.skip)
    with open_sources(RunRequest(settings, str(bundle)), gather(selected)) as sources:
        return run_checks(selected, sources, settings, check_settings(selected, {}))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[CheckResult]]:
    """Every source's check results, by source name."""
    root = tmp_path_factory.mktemp("facts")
    sources: list[tuple[Path, list[str], dict[str, Any]]] = [(b, BUILT_IN, {}) for b in _bundles()]
    sources += [(materialise(n, root / n), BUILT_IN, {}) for n in names()]
    sources += [(b, c, {}) for b, c in _corpus_bundles(root, root / "corpus")]
    sources.append((_with_aer_counters(root), ["pcie_aer"], {}))
    int8 = _int8_logs(root)
    sources.append((int8, ["tensorrt"], {}))
    sources.append((int8, ["tensorrt"], {"trt_probe": True}))  # a replay never probes: why
    sources.append((_gpus_missing_from_the_matrix(root), ["topology"], {}))
    sources += [(b, ["bandwidth"], {}) for b in facts_variants(root / "bandwidth")]
    accept = ["memtest", "compute", "soak"]
    sources += [(b, accept, {}) for b in accept_variants(root / "accept")]
    checks = ["bandwidth", "multigpu"]
    sources += [(b, checks, {}) for b in multigpu_fact_bundles(root / "multigpu")]
    sources += [(b, ["infiniband"], {}) for b in ib_fact_bundles(root)]
    out: dict[str, list[CheckResult]] = {}
    for bundle, checks, config in sources:
        # named with its folder: two makers' bundles of one name (accept's and multigpu's
        # h200x8-accept) are two sources, never one replacing the other
        key = f"{bundle.parent.name}/{bundle.name}{config or ''}"
        assert key not in out, key
        out[key] = check_results(bundle, checks, **config)
    return out


def _facts(outputs: dict[str, list[CheckResult]], check: str) -> list[tuple[str, Any]]:
    return [
        (source, r.facts)
        for source, results in outputs.items()
        for r in results
        if r.name == check and r.facts
    ]


def test_every_built_in_check_declares_a_strict_facts_model() -> None:
    assert len(BUILT_IN) == 15
    for check in CHECKS:
        if check.name in BUILT_IN:
            model = facts_model(check)
            assert model is not None and issubclass(model, FactsModel), check.name


def test_the_sources_cover_every_check(outputs: dict[str, list[CheckResult]]) -> None:
    assert len(outputs) > 40
    for check in BUILT_IN:
        assert len(_facts(outputs, check)) >= 3, check


@pytest.mark.parametrize("check", BUILT_IN)
def test_every_output_matches_its_model_strictly(
    check: str, outputs: dict[str, list[CheckResult]]
) -> None:
    model = facts_model(next(c for c in CHECKS if c.name == check))
    failures = []
    for source, facts in _facts(outputs, check):
        try:
            msgspec.convert(facts, model)
        except msgspec.ValidationError as exc:
            failures.append(f"{source}: {exc}")
    assert not failures, "\n".join(failures[:3])


@pytest.mark.parametrize("check", BUILT_IN)
def test_a_model_refuses_an_undeclared_key_and_a_wrong_type(
    check: str, outputs: dict[str, list[CheckResult]]
) -> None:
    """Control: the models are no catch-alls, so the match above means something."""
    model = facts_model(next(c for c in CHECKS if c.name == check))
    facts = next(f for _s, f in _facts(outputs, check) if f.get("gpus"))
    record = next(g for g in facts["gpus"] if isinstance(g, dict)) if check != "topology" else None
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({**facts, "undeclared": 1}, model)
    if record is not None:
        gpus = [{**record, "undeclared": 1}]
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert({**facts, "gpus": gpus}, model)
        with pytest.raises(msgspec.ValidationError):  # an index is an integer
            msgspec.convert({**facts, "gpus": [{**record, "index": "0"}]}, model)


def _objects(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            yield path, node
        for key, value in node.items():
            yield from _objects(value, f"{path}/{key}")
    elif isinstance(node, list):
        for position, value in enumerate(node):
            yield from _objects(value, f"{path}/{position}")


@pytest.mark.parametrize("check", BUILT_IN)
def test_no_model_leaves_a_place_open(check: str) -> None:
    """Every mapping is either closed (its keys declared) or a map of one declared type."""
    schema = facts_schema(next(c for c in CHECKS if c.name == check))
    for path, node in _objects(schema):
        extra = node.get("additionalProperties")
        if "properties" in node:
            assert extra is False, f"{check}{path} accepts undeclared keys"
        else:
            assert isinstance(extra, dict) and ({"type", "$ref"} & set(extra)), (
                f"{check}{path} is open"
            )


def _declared(shape: Shape, path: str, out: set[str]) -> None:
    for branch in shape.branches():
        if branch.get("type") == "array":
            _declared(Shape(branch.get("items") or {}, shape.defs), f"{path}[]", out)
        elif "properties" in branch:
            for name, field in branch["properties"].items():
                _declared(Shape(field, shape.defs), f"{path}.{name}", out)
        elif isinstance(branch.get("additionalProperties"), dict):
            _declared(Shape(branch["additionalProperties"], shape.defs), f"{path}.*", out)
        else:
            out.add(path)


def _seen(value: Any, shape: Shape, path: str, out: set[str]) -> None:
    if isinstance(value, dict):
        is_map = not any("properties" in b for b in shape.branches())
        for key, item in value.items():
            step = shape.member(key)
            if not isinstance(step, str):
                _seen(item, step, f"{path}.{'*' if is_map else key}", out)
    elif isinstance(value, list):
        step = shape.items()
        for item in value:
            if not isinstance(step, str):
                _seen(item, step, f"{path}[]", out)
    else:
        out.add(path)


@pytest.mark.parametrize("check", BUILT_IN)
def test_every_declared_fact_is_in_some_real_output(
    check: str, outputs: dict[str, list[CheckResult]]
) -> None:
    """A model declares only what the check writes: each leaf is seen, or listed in UNSEEN."""
    schema = facts_schema(next(c for c in CHECKS if c.name == check))
    shape = Shape(schema, schema.get("$defs", {}))
    declared: set[str] = set()
    _declared(shape, "", declared)
    seen: set[str] = set()
    for _source, facts in _facts(outputs, check):
        _seen(facts, shape, "", seen)
    assert declared - seen == set(UNSEEN.get(check, {})), sorted(declared - seen)


def _undeclared(value: Any, shape: Shape, path: str) -> list[str]:
    if isinstance(value, dict):
        out: list[str] = []
        for key, item in value.items():
            step = shape.member(key)
            if isinstance(step, str):
                out.append(f"{path}.{key}: {step}")
            else:
                out.extend(_undeclared(item, step, f"{path}.{key}"))
        return out
    if isinstance(value, list):
        step = shape.items()
        if isinstance(step, str):
            return [f"{path}: {step}"]
        return [p for item in value for p in _undeclared(item, step, f"{path}[]")]
    return []


def test_what_the_engine_builds_holds_only_declared_paths(
    outputs: dict[str, list[CheckResult]],
) -> None:
    """The activation (`checks.<check>...`, `findings`) and each GPU's record (`gpu.<check>`)
    as `engine.evaluate` builds them from the real results: every path is in the schema the
    rules are validated against."""
    schema = activation(discover(), ProfileSchema.of_checks(discover()).json_schema())
    node = Shape(schema.node, schema.defs)
    gpu = Shape(schema.gpu, schema.defs)
    records = 0
    for source, results in outputs.items():
        values = build_activation(results, None, {}, {})
        found = _undeclared(values, node, "")
        for view in gpu_views(values["checks"]):
            records += 1
            found.extend(_undeclared(view, gpu, "gpu"))
        assert not found, f"{source}: {found[:5]}"
    assert records > 100


def test_a_gpu_record_path_the_engine_never_builds_is_not_in_the_schema() -> None:
    """Control: the gpu schema has the engine's record keys and each check's records only."""
    schema = activation(discover(), ProfileSchema.of_checks(discover()).json_schema())
    gpu = Shape(schema.gpu, schema.defs)
    nvlink = gpu.member("nvlink")
    assert not isinstance(nvlink, str)
    assert not isinstance(nvlink.member("links_reported"), str)
    assert "did you mean 'links_reported'" in str(nvlink.member("links_reportd"))
    assert not isinstance(gpu.member("uuid"), str)  # the identity the engine joins by
    assert isinstance(gpu.member("serial"), str)  # not a key of the engine's GPU record
    topology = gpu.member("topology")  # its `per_gpu` records, not its `gpus` (names)
    assert not isinstance(topology, str) and not isinstance(topology.member("in_matrix"), str)
