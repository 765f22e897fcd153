"""A differential for the topology judge, the TensorRT log scanner and the InfiniBand judge:
what each made of its inputs when `<check>.txt` (in this folder) was written, one block per input.

The inputs:
- `topology`: every text of the corpus and of tests/fixtures/topo, parsed by `parse_topo` and
  judged alone (a text that holds no matrix: its `unparsable` finding);
- `tensorrt`: every text of the corpus and of tests/fixtures, scanned as a TensorRT log (the
  other kinds' texts are logs with no TensorRT message: what the scanner makes of them);
- `infiniband`: the corpus's InfiniBand trees (`tests/infiniband/ib_tree.py`: the recorded
  mlx5 and mlx4/i40iw trees, the ibstat and ibstatus reports as sysfs, eight NDR HCAs), each
  read once and over a 3 s window in which its counters grew (the recorded mlx5 port also over
  a window too short for rates).

A block is the input's name, then its facts (one line a key, or a list item a line), findings
(their excerpts cut) and what could not be judged as JSON, and metrics one a line. Written by
the code before the split of issue 31 item 2 (radon mi >= 20 a file), which gives the same
blocks. To write them again (only
where a change of facts is meant, then read the diff):

    python tests/judged/judged.py
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
for extra in (TESTS / "infiniband", TESTS):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from plain_values import without_defaults  # noqa: E402

RECORDED = HERE  # <check>.txt
TEXTS = sorted([*(TESTS / "corpus").rglob("*.txt"), *(TESTS / "fixtures").rglob("*.txt")])

Record = Callable[[], list[str]]  # -> the block's lines


def _line(kind: str, value: Any) -> str:
    return f"{kind} {json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)}"


def _lines(kind: str, value: Any) -> Iterator[str]:
    """A value as lines: a dict one key a line, a list one item a line (one level down); the
    topology matrix's cells (`links`, the parser's) as one line of `a>b kind`."""
    if kind == "fact.links" and isinstance(value, list):
        yield f"{kind} " + ", ".join(f"{link['a']}>{link['b']} {link['kind']}" for link in value)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _lines(f"{kind}.{key}", item)
    elif isinstance(value, list) and value:
        for number, item in enumerate(value):
            yield _line(f"{kind}[{number}]", item)
    else:
        yield _line(kind, value)


def _plain(record: Any) -> Any:
    """A finding (a Struct) as JSON values, its excerpts cut at 200 characters."""
    plain: dict[str, Any] = without_defaults(record)
    for evidence in plain.get("evidence", []):
        if evidence.get("excerpt"):
            evidence["excerpt"] = evidence["excerpt"][:200]
    return plain


def _metric(metric: Any) -> str:
    labels = ", ".join(f"{k}={v}" for k, v in sorted(metric.labels.items()))
    return f"metric {metric.name}{{{labels}}} = {metric.value!r} {metric.unit} ({metric.kind})"


def _output(facts: Any, findings: Any, not_judged: Any, metrics: Any = ()) -> list[str]:
    out = list(_lines("fact", facts))
    out += [_line("finding", _plain(f)) for f in findings]
    out += [_metric(m) for m in metrics]
    return out + [_line("not_judged", note) for note in not_judged]


def _name(path: Path) -> str:
    return str(path.relative_to(TESTS))


def _topology(path: Path) -> Record:
    def record() -> list[str]:
        from sitscheck.checks.topology.judge import TopologyInputs, judge, unparsable
        from sitscheck.checks.topology.parse import TopoParseError, parse_topo

        text = path.read_text(errors="replace")
        try:
            matrix = parse_topo(text)
        except TopoParseError as error:
            return [_line("unparsable", _plain(unparsable(error, path.name, text)))]
        judged = judge(TopologyInputs(matrix=matrix, topo_ref=path.name))
        return _output(judged.facts, judged.findings, judged.not_judged)

    return record


def _tensorrt(path: Path) -> Record:
    def record() -> list[str]:
        from sitscheck.checks.tensorrt.parse import scan_trt_log

        log = scan_trt_log(path.read_text(errors="replace").splitlines(), path.name)
        totals = [log.fallbacks_total, log.precision_fallbacks_total, log.errors_total]
        return [*_lines("fact", log.to_fact()), _line("totals", totals)]

    return record


def _trees() -> dict[str, Callable[[], dict[str, str]]]:
    from ib_tree import (
        CORPUS,
        eight_ndr_hcas,
        ibstat_to_sysfs,
        ibstatus_to_sysfs,
        load_tsv,
        mlx4_files,
    )

    return {
        "001-procfs-mlx5_0-mt4118": lambda: load_tsv("001-procfs-mlx5_0-mt4118.tsv"),
        "002-node-exporter-mlx4_0-i40iw0": lambda: load_tsv("002-node-exporter-mlx4_0-i40iw0.tsv"),
        "003-ibstat-h100-12hca-some-down": lambda: ibstat_to_sysfs(
            (CORPUS / "003-ibstat-h100-12hca-some-down.txt").read_text()
        ),
        "004-ibstatus-a100-hdr-all-active": lambda: ibstatus_to_sysfs(
            (CORPUS / "004-ibstatus-a100-hdr-all-active.txt").read_text()
        ),
        "eight-ndr-hcas": eight_ndr_hcas,
        "mlx4": lambda: mlx4_files("0000:05:00.0"),
    }


# counters grown over the 3 s window: errors, link events, retransmits, congestion, traffic
GROWN = {
    "counters/symbol_error": 7,
    "counters/port_rcv_errors": 3,
    "counters/link_downed": 1,
    "counters/link_error_recovery": 2,
    "counters/port_xmit_discards": 5,
    "counters/port_xmit_packets": 100_000,
    "counters/port_xmit_data": 4_000_000,
    "counters_ext/port_xmit_packets_64": 100_000,
    "hw_counters/local_ack_timeout_err": 4,
    "hw_counters/packet_seq_err": 2,
    "hw_counters/out_of_sequence": 1,
    "hw_counters/rx_icrc_encapsulated": 9,
    "hw_counters/np_cnp_sent": 11,
    "hw_counters/num_cqovf": 3,
}


def _grown(files: dict[str, str]) -> dict[str, str]:
    end = dict(files)
    for path, text in files.items():
        for counter, by in GROWN.items():
            if path.endswith("/" + counter) and text.strip().isdigit():
                end[path] = str(int(text) + by)
    return end


def _infiniband(tree: Callable[[], dict[str, str]], how: str) -> Record:
    def record() -> list[str]:
        from sitscheck.checks.infiniband.judge import Inputs, judge
        from sitscheck.checks.infiniband.window import Reading, Window

        start = tree()
        if how == "once":
            window = Window(Reading(start), None, None, "read once")
        elif how == "short":
            window = Window(Reading(start), Reading(dict(start)), 0.5, None)
        else:
            window = Window(Reading(start), Reading(_grown(start)), 3.0, None)
        out = judge(Inputs(window=window, source="/sys"))
        return _output(out.facts, out.findings, out.not_judged, out.metrics)

    return record


def inputs(check: str) -> dict[str, Record]:
    """The inputs of one check's file by name, nothing read yet."""
    if check == "topology":
        return {_name(path): _topology(path) for path in TEXTS}
    if check == "tensorrt":
        return {_name(path): _tensorrt(path) for path in TEXTS}
    out = {f"{name}/{how}": _infiniband(tree, how) for name, tree in _trees().items()
           for how in ("once", "grown")}  # fmt: skip
    out["001-procfs-mlx5_0-mt4118/short"] = _infiniband(
        _trees()["001-procfs-mlx5_0-mt4118"], "short"
    )
    return dict(sorted(out.items()))


CHECKS = ("topology", "tensorrt", "infiniband")


def read_recorded(check: str) -> dict[str, list[str]]:
    blocks: dict[str, list[str]] = {}
    current: list[str] = []
    for line in (RECORDED / f"{check}.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("== "):
            current = blocks[line[3:]] = []
        elif line:
            current.append(line)
    return blocks


def write() -> None:
    for check in CHECKS:
        with (RECORDED / f"{check}.txt").open("w", encoding="utf-8") as out:
            for name, record in inputs(check).items():
                out.write(f"== {name}\n")
                out.writelines(line + "\n" for line in record())
                out.write("\n")


if __name__ == "__main__":
    write()
