"""Scenario bundles: a recorded bundle with injected faults, kept as the difference only.

Each `tests/bundles/scenarios/<name>/` holds:

- `expected.json`: `description`, `base` (a bundle folder under tests/bundles, default
  `h200x2-idle-v0`), `verdicts` (every verdict above ok: rule, gpu or null, status),
  `root_causes` (the fired verdicts no other verdict explains: rule, gpu, and the finding codes
  `explains_findings` it names that the checks must have raised on that GPU) and `info`
  (fired info-level verdicts, which never change a status);
- `nvml.patch.json` (optional): edits to the base's `nvml.json`, see `patch_nvml`;
- `dmesg.append.txt` (optional): kernel-log lines appended to the base's `dmesg.txt`;
- any other file (`nvidia-smi-topo-m.txt`, `nvidia-smi-L.txt`, `tensorrt/*.log`,
  `sysfs/...`): added to the bundle or replacing the base's file of the same path.

The base's `nvidia-smi-q.txt`, `nvidia-smi-query-gpu.csv` and `nvidia-smi-dmon.txt` are left
out of a materialised scenario: they hold the base's idle readings, which the injected NVML
faults would contradict (the checks read NVML first and need none of them).

`python tests/rules/rule_scenarios.py NAME DIR` writes scenario NAME as a runnable bundle
(`sitscheck run --from DIR`).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sitscheck.models import Report

TESTS = Path(__file__).resolve().parent.parent
BUNDLES = TESTS / "bundles"
SCENARIOS = BUNDLES / "scenarios"
DEFAULT_BASE = "h200x2-idle-v0"
CONTROL = {"expected.json", "nvml.patch.json", "dmesg.append.txt"}
LEFT_OUT = ("nvidia-smi-q.txt", "nvidia-smi-query-gpu.csv", "nvidia-smi-dmon.txt")


def names() -> list[str]:
    return sorted(p.name for p in SCENARIOS.iterdir() if (p / "expected.json").is_file())


def expected(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCENARIOS / name / "expected.json").read_text())
    return data


def materialise(name: str, target: Path) -> Path:
    """Write scenario `name` as a bundle at `target` (which must not exist yet)."""
    source = SCENARIOS / name
    base = BUNDLES / expected(name).get("base", DEFAULT_BASE)
    shutil.copytree(base, target)
    for left_out in LEFT_OUT:
        (target / left_out).unlink(missing_ok=True)
    patch = source / "nvml.patch.json"
    if patch.is_file():
        nvml = json.loads((target / "nvml.json").read_text())
        patch_nvml(nvml, json.loads(patch.read_text()))
        (target / "nvml.json").write_text(json.dumps(nvml, indent=1) + "\n")
    extra = source / "dmesg.append.txt"
    if extra.is_file():
        with (target / "dmesg.txt").open("a") as log:
            log.write(extra.read_text())
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.is_file() and str(relative) not in CONTROL:
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
    return target


def patch_nvml(nvml: dict[str, Any], patch: dict[str, Any]) -> None:
    """Apply a scenario's NVML edits.

    `set`: dotted paths into the snapshot (`pairs.0.p2p_nvlink`). `gpus`: per GPU index,
    `replace` (the whole record), `set` (dotted paths into the record: `pcie.width_current`,
    `nvlink.5.active`; null deletes), `samples` / `gpm` (a field set in every sample or GPM
    record: a number, or a list cycled over the records), `nvlink` (fields set on every link,
    `errors_end` given as increments over `errors`).
    """
    for path, value in (patch.get("set") or {}).items():
        _set(nvml, path, value)
    for key, edits in (patch.get("gpus") or {}).items():
        position = next(i for i, g in enumerate(nvml["gpus"]) if g["index"] == int(key))
        if "replace" in edits:
            nvml["gpus"][position] = edits["replace"]
        gpu = nvml["gpus"][position]
        for path, value in (edits.get("set") or {}).items():
            _set(gpu, path, value)
        for series in ("samples", "gpm"):
            for field, value in (edits.get(series) or {}).items():
                for n, record in enumerate(gpu.get(series) or []):
                    record[field] = value[n % len(value)] if isinstance(value, list) else value
        for field, value in (edits.get("nvlink") or {}).items():
            for link in gpu.get("nvlink") or []:
                if field == "errors_end":
                    link["errors_end"] = {
                        k: v + int(value.get(k, 0)) for k, v in link["errors"].items()
                    }
                elif value is None:
                    link.pop(field, None)
                else:
                    link[field] = value


def _set(record: Any, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        record = record[int(part)] if isinstance(record, list) else record.setdefault(part, {})
    if isinstance(record, list):
        record[int(last)] = value
    elif value is None:
        record.pop(last, None)
    else:
        record[last] = value


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} SCENARIO TARGET_DIR (scenarios: {', '.join(names())})")
    print(materialise(sys.argv[1], Path(sys.argv[2])))


def replay(bundle: Path, **config: object) -> Report:
    """Replay a bundle through every check, the built-in rules and profiles."""
    from sitscheck.app import RunRequest, execute
    from sitscheck.config import RunConfig

    return execute(RunRequest(RunConfig(**config), str(bundle)))  # type: ignore[arg-type]
