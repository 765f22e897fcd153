"""Every recorded bundle's facts (as digests) and verdicts, for the old-vs-new engine test.

`python tests/rules/engine_snapshot.py OUT.json` replays each bundle of `bundles()` (every
folder under tests/bundles with a `meta.json`, the scenarios materialised, examples/ but
its plugins' bundles (which replay through a plugin sitscheck alone does not have: their own
tests replay them), and the idle node grown to 8 and 24 GPUs by `benchmarks.synth`)
and writes, per bundle, each check's status and a digest of its facts with the storm
fields (`event_count`, `groups`) left out, and every verdict (rule, status, GPU, message).
`tests/rules/data/engine-before.json` was written by the code before the engine change
(celpy, the rule files' per-GPU joins, the YAML read twice, events kept whole): the
differential test replays the same bundles now and compares.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from rule_scenarios import BUNDLES, materialise, names  # noqa: E402

ROOT = HERE.parent.parent
STORM_FIELDS = ("event_count", "groups")
# check -> facts field added since the snapshots (this one and tests/storm's golden file) ->
# its value in every snapshot bundle, and why (`digest` leaves it out where it holds that)
ADDED_FACTS: dict[str, dict[str, Any]] = {
    # the multi-GPU phase of `sitscheck accept` (issue 30, facts.md "Acceptance checks") adds
    # NCCL's all-reduce figure to the bandwidth facts: null outside an acceptance run
    "bandwidth": {"nccl": None},
}


def bundles(scratch: Path) -> dict[str, Path]:
    found = {
        str(meta.parent.relative_to(ROOT)): meta.parent
        for folder in (BUNDLES, ROOT / "examples")
        for meta in sorted(folder.rglob("meta.json"))
        if "scenarios" not in meta.parts and not meta.is_relative_to(ROOT / "examples" / "plugins")
    }
    for name in names():
        found[f"tests/bundles/scenarios/{name}"] = materialise(name, scratch / name)
    sys.path.insert(0, str(ROOT))
    from benchmarks.synth import large_node_bundle

    for gpus in (8, 24):  # the recorded idle node grown: every per-GPU join and pair rule
        large_node_bundle(BUNDLES / "h200x2-idle-v0", scratch / f"n{gpus}", gpus, 20_000)
        found[f"synth/h200x{gpus}"] = scratch / f"n{gpus}"
    return dict(sorted(found.items()))


def digest(facts: dict[str, Any], bundle: Path, added: Mapping[str, Any] | None = None) -> str:
    """Of the facts less the storm fields, with the bundle's folder (a scratch folder for a
    materialised one) written as `<bundle>`. `added`: fields added to the check since a
    snapshot was taken, with the value it must still have there: left out where they hold it
    (a field that holds anything else stays in, and the digest differs)."""
    added = added or {}
    kept = {
        k: v
        for k, v in facts.items()
        if k not in STORM_FIELDS and not (k in added and v == added[k])
    }
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
    text = text.replace(str(bundle), "<bundle>")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def snapshot(bundle: Path, added: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """`added`: per check, the facts fields added since the snapshot compared with (`digest`)."""
    from sitscheck.app import RunRequest, execute
    from sitscheck.config import RunConfig

    report = execute(RunRequest(RunConfig(), str(bundle)))
    added = added or {}
    return {
        "checks": {
            c.name: [c.status.value, digest(c.facts, bundle, added.get(c.name))]
            for c in report.checks
        },
        "verdicts": [
            [
                v.rule,
                v.status.value,
                v.device.index if v.device else None,
                v.message.replace(str(bundle), "<bundle>"),
                v.reason is not None,
            ]
            for v in report.verdicts
        ],
    }


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        data = {name: snapshot(path) for name, path in bundles(Path(scratch)).items()}
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
