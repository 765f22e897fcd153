"""Expected reports: what each recorded bundle, storm and kernel-log corpus sample gives, kept
as readable JSON under `tests/storm/expected/` (one file per case, keys sorted).

The cases, each replayed with the code under test:

- `bundles/<name>`: every bundle of `tests/bundle_cases.py` (the recorded nodes, the fault
  bundles, each scenario materialised) and the recorded idle node grown to 8 and 24 GPUs
  (`synth/h200x8`, `synth/h200x24`, by `benchmarks.synth`): the report's status, exit code and
  headline, every check whole and every verdict;
- `storms/<stamp>`: 3,000 mixed AER and Xid reports (`storms.storm`, each time form) as the
  `dmesg.txt` of the recorded 2×H200 idle bundle, the pcie_aer and xid checks only; of the
  1,000 events each keeps, the first 20 whole and a digest of all;
- `corpus/<set>/<kind>/<sample>`: each aer and xid sample of the corpus (`shared` and `own`):
  the parser's events (`parse_aer` / `parse_xid`) and the same replay of the sample as the
  `dmesg.txt` of the recorded 2×H200 idle bundle, the two checks only.

Normalised: the report's host, start time, duration and version, each check's duration, and
fields at their default value are left out; the bundle's folder is written `<bundle>`. A
verdict that says more than its rule's description is its rule, status, GPU, message, reason
and the verdicts that explain it (the rule's source and action are the rule file's); the rest
are listed by rule id, as `ok` or under the reason they were `skipped`. A metric is one line,
`name{label="value", ...} = value unit`, and `(counter)` or `(event)` after a gauge's kind.

`pytest tests/storm --update-expected` rewrites every file from the code it runs (then read the
diff before committing it).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
ROOT = TESTS.parent
for extra in (TESTS / "corpus", TESTS):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from bundle_cases import BUNDLES, CASES, bundle_folder  # noqa: E402
from corpus_sets import roots  # noqa: E402
from plain_values import without_defaults  # noqa: E402
from rule_cases import default_message  # noqa: E402  (tests/rules, put on the path by bundle_cases)
from sitscheck.models import Status, Verdict  # noqa: E402
from storms import STAMPS, storm  # noqa: E402

EXPECTED = HERE / "expected"
KERNEL_CHECKS = ("pcie_aer", "xid")
BASE = BUNDLES / "h200x2-idle-v1"
IDLE = BUNDLES / "h200x2-idle-v0"  # the node `synth` grows
SYNTH_GPUS = (8, 24)
STORM_REPORTS = 3000  # `storms.storm`: about 2,400 AER and 600 Xid/SXid reports
STORM_EVENTS_WHOLE = 20
WIDTH = 100  # a list or object this wide or less is written on one line

Record = dict[str, Any]
Builder = Callable[[Path], Record]  # a scratch folder -> the case's record


def digest(value: Any) -> str:
    """Of `value`'s JSON, keys sorted: how a storm's 1,000 events are kept."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _scrub(value: Any, folder: Path) -> Any:
    text = json.dumps(value, sort_keys=True, default=str).replace(str(folder), "<bundle>")
    return json.loads(text)


def record(folder: Path, checks: tuple[str, ...] = ()) -> Record:
    """One replay of `folder` (every check, or `checks`), normalised."""
    from sitscheck.app import RunRequest, execute
    from sitscheck.config import RunConfig

    report = execute(RunRequest(RunConfig(checks=list(checks)), str(folder)))
    bodies = {}
    for check in report.checks:
        body = without_defaults(check)
        body.pop("duration_s", None)
        if "metrics" in body:
            body["metrics"] = [metric_line(m) for m in body["metrics"]]
        bodies[check.name] = body
    out = {
        "status": report.status.value,
        "exit_code": report.exit_code,
        "headline": report.headline,
        **verdicts(report.verdicts),
        "checks": bodies,
    }
    scrubbed: Record = _scrub(out, folder)  # (its keys sorted at every level)
    return {key: scrubbed[key] for key in out}  # the summary first, the checks last


def verdicts(found: list[Verdict]) -> Record:
    """`verdicts`: each one that says more than its rule's own description (fired, unknown,
    an info rule's reading, one on a GPU or explained by another), in the report's order;
    `ok`: the rules that hold, node-wide; `skipped`: the rules skipped, by reason."""
    whole: list[Record] = []
    ok: list[str] = []
    skipped: dict[str, list[str]] = {}
    for v in found:
        plain = v.device is None and not v.explained_by and v.message == default_message(v.rule)
        if plain and v.status == Status.OK and v.reason is None:
            ok.append(v.rule)
        elif plain and v.status == Status.SKIPPED and v.reason is not None:
            skipped.setdefault(v.reason, []).append(v.rule)
        else:
            whole.append(
                {
                    "rule": v.rule,
                    "status": v.status.value,
                    "gpu": v.device.index if v.device else None,
                    "message": v.message,
                    **({"reason": v.reason} if v.reason is not None else {}),
                    **({"explained_by": v.explained_by} if v.explained_by else {}),
                }
            )
    return {"verdicts": whole, "ok": ok, "skipped": skipped}


def metric_line(metric: dict[str, Any]) -> str:
    """A metric as one line: `name{label="value", ...} = value unit`, then `(counter)` or
    `(event)` unless it is a gauge (`metric_of` reads it back)."""
    labels = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(metric.get("labels", {}).items()))
    kind = metric.get("kind", "gauge")
    line = f"{metric['name']}{{{labels}}} = {json.dumps(metric['value'])} {metric['unit']}"
    return line + ("" if kind == "gauge" else f" ({kind})")


_METRIC = re.compile(
    r"^(?P<name>[^{]+)\{(?P<labels>.*)\} = (?P<value>\S+) (?P<unit>.*?)"
    r"(?: \((?P<kind>counter|event)\))?$"
)
_LABEL = re.compile(r'(?P<key>[^=, ]+)=(?P<value>"(?:[^"\\]|\\.)*")')


def metric_of(line: str) -> dict[str, Any]:
    """`metric_line`'s metric back (as the report's JSON has it, defaults left out)."""
    match = _METRIC.match(line)
    assert match is not None, line
    out: dict[str, Any] = {
        "name": match["name"],
        "value": json.loads(match["value"]),
        "unit": match["unit"],
    }
    labels = {m["key"]: json.loads(m["value"]) for m in _LABEL.finditer(match["labels"])}
    if labels:
        out["labels"] = labels
    if match["kind"]:
        out["kind"] = match["kind"]
    return out


def _bundle(case: str) -> Builder:
    return lambda scratch: record(bundle_folder(case, scratch))


def _synth(gpus: int) -> Builder:
    def build(scratch: Path) -> Record:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        from benchmarks.synth import large_node_bundle

        folder = scratch / f"h200x{gpus}"
        large_node_bundle(IDLE, folder, gpus, 20_000)
        return record(folder)

    return build


def _storm(stamp: str) -> Builder:
    def build(scratch: Path) -> Record:
        folder = scratch / f"storm-{stamp}"
        shutil.copytree(BASE, folder)
        storm(folder / "dmesg.txt", STORM_REPORTS, STAMPS[stamp])
        out = record(folder, KERNEL_CHECKS)
        for check in KERNEL_CHECKS:
            facts = out["checks"][check]["facts"]
            events = facts["events"]
            facts["events"] = {"first": events[:STORM_EVENTS_WHOLE], "digest": digest(events)}
        return out

    return build


def _sample(kind: str, sample: Path) -> Builder:
    def build(scratch: Path) -> Record:
        from sitscheck.checks.pcie_aer.parse import parse_aer
        from sitscheck.checks.xid.parse import parse_xid
        from sitscheck.kernlog.lines import iter_kernel_lines

        parse = parse_aer if kind == "aer" else parse_xid
        lines = sample.read_text(errors="replace").splitlines()
        events = [e.to_fact() for e in parse(iter_kernel_lines(lines))]
        folder = scratch / "sample"
        shutil.copytree(BASE, folder)
        shutil.copyfile(sample, folder / "dmesg.txt")
        return {"events": events, "replay": record(folder, KERNEL_CHECKS)}

    return build


def cases() -> dict[str, Builder]:
    """Every case by name (its file is `expected/<name>.json`), nothing built yet."""
    out: dict[str, Builder] = {f"bundles/{case}": _bundle(case) for case in CASES}
    out.update({f"bundles/synth/h200x{gpus}": _synth(gpus) for gpus in SYNTH_GPUS})
    out.update({f"storms/{stamp}": _storm(stamp) for stamp in STAMPS})
    for corpus_set, root in roots().items():
        for kind in ("aer", "xid"):
            for sample in sorted((root / kind).glob("*.txt")):
                out[f"corpus/{corpus_set}/{kind}/{sample.stem}"] = _sample(kind, sample)
    return dict(sorted(out.items()))


def path_of(case: str) -> Path:
    return EXPECTED / f"{case}.json"


def dumps(value: Record) -> str:
    """Stable, readable JSON (in the order of `value`'s keys; `record` sorts all but its own
    few): a list or object on one line where it fits in
    `WIDTH`, else one item a line; text as printed unless it is not printable (control, bidi,
    separator and unassigned characters are written as escapes)."""
    text = "\n".join(_lines(value, 0, ""))
    return _NOT_ASCII.sub(_escaped, text) + "\n"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _lines(value: Any, indent: int, prefix: str) -> list[str]:
    pad = "  " * indent
    one = pad + prefix + _compact(value)
    if not isinstance(value, (dict, list)) or not value or len(one) <= WIDTH:
        return [one]
    if isinstance(value, dict):
        items = [_lines(v, indent + 1, _compact(k) + ": ") for k, v in value.items()]
        opening, closing = "{", "}"
    elif all(not isinstance(v, (dict, list)) for v in value):
        items = _filled([_compact(v) for v in value], "  " * (indent + 1))
        opening, closing = "[", "]"
    else:
        items = [_lines(v, indent + 1, "") for v in value]
        opening, closing = "[", "]"
    out = [pad + prefix + opening]
    for number, item in enumerate(items):
        if number < len(items) - 1:
            item[-1] += ","
        out.extend(item)
    return [*out, pad + closing]


def _filled(words: list[str], pad: str) -> list[list[str]]:
    """A list of numbers or strings, as many a line as fit in `WIDTH` (the caller puts the
    comma after each line but the last)."""
    rows: list[list[str]] = []
    line = ""
    for word in words:
        if line and len(line) + len(word) + 2 > WIDTH:
            rows.append([line])
            line = ""
        line = f"{line}, {word}" if line else pad + word
    rows.append([line])
    return rows


_NOT_ASCII = re.compile(r"[^\x00-\x7f]")  # json.dumps has escaped ASCII's control characters


def _escaped(found: re.Match[str]) -> str:
    ch = found[0]
    if not unicodedata.category(ch).startswith(("C", "Z")):
        return ch
    return json.dumps(ch)[1:-1]  # \uXXXX (a pair of them beyond the BMP)
