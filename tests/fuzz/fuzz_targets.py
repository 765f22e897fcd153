"""Fuzz targets: one function per parser family taking raw bytes, shared by the hypothesis
suites (`test_fuzz_*.py`) and the atheris drivers (`atheris_*.py`, for longer runs by hand).

Each target feeds the bytes in the way production does (a command's or a file's bytes decoded
as UTF-8 with replacement, a file written to disk for the loaders) and fails (an exception
other than the parser's own refusal, or a broken invariant) on anything a hostile input must
never cause. Time and memory are bounded by the callers (hypothesis deadlines, libFuzzer's
-timeout and -rss_limit_mb).
"""

from __future__ import annotations

import atexit
import io
import json
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from fakes.kernel_lines import candidate_lines
from sitscheck.checks.pcie_aer.parse import AER_ANCHORS, HEAD_LINES, might_be_aer, parse_aer
from sitscheck.checks.tensorrt.parse import scan_trt_log
from sitscheck.checks.topology.parse import TopoParseError, parse_topo
from sitscheck.checks.xid.parse import XID_ANCHORS, might_be_xid, parse_xid
from sitscheck.contract.evidence import gather
from sitscheck.contract.registry import discover
from sitscheck.daemon.state import STATE_FILE, load_state
from sitscheck.engine.cel import CelEnvironment
from sitscheck.engine.loader import load_rules
from sitscheck.errors import BundleError, ConfigError, RuleError
from sitscheck.kernlog.lines import iter_kernel_lines
from sitscheck.kernlog.scan import declared_interests, scan_lines
from sitscheck.site_config import load_site_config
from sitscheck.smi.dmon import parse_dmon_result
from sitscheck.smi.list_gpus import parse_list_gpus
from sitscheck.smi.query_csv import parse_query_csv_result
from sitscheck.smi.query_q import parse_query_q
from sitscheck.smi.values import SmiParseError
from sitscheck.sources import artifacts as names
from sitscheck.sources.bundle import opened_bundle
from sitscheck.sources.replay import ReplaySources

Target = Callable[[bytes], None]

INTERESTS = declared_interests(discover())

# every command output the installed checks declare
DECLARED_FILES = tuple(gather(discover()).commands)


def text_of(data: bytes) -> str:
    """How every source turns bytes into text: UTF-8, undecodable bytes replaced."""
    return data.decode("utf-8", errors="replace")


# ---- scratch space for the loaders that read files -------------------------------------------

_scratch: Path | None = None


def scratch() -> Path:
    """A private folder for this process, removed at exit."""
    global _scratch
    if _scratch is None:
        _scratch = Path(tempfile.mkdtemp(prefix="sitscheck-fuzz-"))
        atexit.register(shutil.rmtree, _scratch, True)
    return _scratch


@contextmanager
def fresh(name: str) -> Iterator[Path]:
    """An empty folder `scratch()/name`, emptied again afterwards."""
    folder = scratch() / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---- text parsers ----------------------------------------------------------------------------


def smi_list(data: bytes) -> None:
    try:
        parsed = parse_list_gpus(text_of(data))
    except SmiParseError:
        return
    assert len(parsed.gpus) <= len(data)  # never more GPUs than the text could name


def smi_csv(data: bytes) -> None:
    try:
        parse_query_csv_result(text_of(data))
    except SmiParseError:
        return


def smi_q(data: bytes) -> None:
    try:
        parsed = parse_query_q(text_of(data))
    except SmiParseError:
        return
    json.dumps(parsed.tree.to_dict(), default=str)


def smi_dmon(data: bytes) -> None:
    try:
        parse_dmon_result(text_of(data))
    except SmiParseError:
        return


def topo(data: bytes) -> None:
    try:
        matrix = parse_topo(text_of(data))
    except TopoParseError:
        return
    json.dumps(matrix.to_fact(), default=str)  # the facts a report carries serialise


def trt_log(data: bytes) -> None:
    cap = 16
    log = scan_trt_log(text_of(data).splitlines(), "fuzz.log", max_items=cap)
    for items in (log.errors, log.fallbacks, log.precision_fallbacks):
        assert len(items) <= cap  # the lists a report carries stay capped
    json.dumps(log.to_fact(), default=str)


def kernel_log(data: bytes) -> None:
    """Both ways a kernel log is read: lines of text (live), chunks of a file (bundle)."""
    lines, found = scan_lines(text_of(data).splitlines(), INTERESTS)
    aer, xid = found["pcie_aer"], found["xid"]
    assert lines >= 0
    for tally in (aer, xid):
        facts = tally.storm.facts(lambda e: e.to_fact())  # the first events kept, counted
        json.dumps(facts, default=str)
        assert sum(g["count"] for g in facts["groups"]) == facts["event_count"] == tally.count
    third = max(len(data) // 3, 1)
    chunks = [data[i : i + third] for i in range(0, len(data), third)]
    aer_lines = candidate_lines(iter(chunks), AER_ANCHORS, HEAD_LINES)
    parse_aer(list(iter_kernel_lines(filter(might_be_aer, aer_lines))))
    parse_xid(list(iter_kernel_lines(filter(might_be_xid, candidate_lines(chunks, XID_ANCHORS)))))


# ---- files: rule files, site config, daemon state, bundles ----------------------------------


CEL = CelEnvironment()  # built once (celpy raises the recursion limit as it starts)


def rule_file(data: bytes) -> None:
    with fresh("rules") as folder:
        path = folder / "fuzz.yaml"
        path.write_bytes(data)
        try:
            load_rules([path], CEL)
        except RuleError as exc:
            assert str(exc).startswith(str(path)), exc  # every refusal names the file


def site_config(data: bytes) -> None:
    with fresh("config") as folder:
        path = folder / "config.yaml"
        path.write_bytes(data)
        try:
            load_site_config(path)
        except ConfigError as exc:
            assert str(path) in str(exc), exc


NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)


def state_file(data: bytes) -> None:
    """Any state file: used, or moved aside with a note; never raised."""
    with fresh("state") as folder:
        (folder / STATE_FILE).write_bytes(data)
        loaded = load_state(folder, NOW)
        if loaded.state is None:
            assert len(loaded.notes) == 1 and "moved aside" in loaded.notes[0]
            assert not (folder / STATE_FILE).exists()
            assert len(list(folder.glob(f"{STATE_FILE}.bad-*"))) == 1


def bundle_tar(data: bytes) -> None:
    """Any archive: refused naming itself, or unpacked inside its temporary folder only, with
    no link or device in it; its evidence reads back without escaping."""
    with fresh("bundle") as sandbox:
        archive = sandbox / "bundle.tar"
        archive.write_bytes(data)
        unpack_to = sandbox / "tmp"
        unpack_to.mkdir()
        before = tempfile.tempdir
        tempfile.tempdir = str(unpack_to)
        try:
            with opened_bundle(archive) as root:
                assert unpack_to in root.parents or root == unpack_to
                for path in root.rglob("*"):
                    assert not path.is_symlink(), path
                    assert path.is_file() or path.is_dir(), path
                _read_back(ReplaySources(root, label="fuzz"))
        except BundleError as exc:
            assert str(archive) in str(exc), exc
        finally:
            tempfile.tempdir = before
        assert sorted(p.name for p in sandbox.iterdir()) == ["bundle.tar", "tmp"], list(
            sandbox.iterdir()
        )
        assert list(unpack_to.iterdir()) == []  # the unpacked copy is gone afterwards


def _read_back(sources: ReplaySources) -> None:
    for name in DECLARED_FILES:
        sources.artifact(name)
    sources.meta()
    sources.driver()
    sources.log_files("tensorrt")
    stream = sources.kernel_log()
    if stream.lines is not None:
        for _ in stream.lines:
            pass


def tarball_of(members: dict[str, bytes]) -> bytes:
    """A plain tar of regular files (seeds for the bundle target)."""
    with fresh("seed") as folder:
        path = folder / "seed.tar"
        with tarfile.open(path, "w") as tar:
            for name, body in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(body)
                info.mtime = 0
                tar.addfile(info, io.BytesIO(body))
        return path.read_bytes()


TARGETS: dict[str, Target] = {
    "smi_list": smi_list,
    "smi_csv": smi_csv,
    "smi_q": smi_q,
    "smi_dmon": smi_dmon,
    "topo": topo,
    "trt_log": trt_log,
    "kernel_log": kernel_log,
    "rule_file": rule_file,
    "site_config": site_config,
    "state_file": state_file,
    "bundle_tar": bundle_tar,
}

# Real samples to start from: the recorded bundle's files and the repo's rule files.
REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tests" / "bundles" / "h200x2-idle-v0"
TRT_SAMPLE = (
    b"[11/29/2026-17:58:01] [W] [TRT] Skipping tactic 3 due to insufficient memory on requested "
    b"size of 9385 detected for tactic 0x0000000000000004.\n"
    b"[11/29/2026-17:58:02] [I] [TRT] Engine built in 24.1049 sec.\n"
    b"[11/29/2026-17:58:02] [E] [TRT] 10: Could not find any implementation for node "
    b"{ForeignNode[/layers.7/Reshape_4]}.\n"
)


def seeds(target: str) -> list[bytes]:
    """Valid inputs of the target's kind (what mutation starts from)."""
    files = {
        "smi_list": [names.NVIDIA_SMI_L],
        "smi_csv": [names.NVIDIA_SMI_QUERY_GPU],
        "smi_q": [names.NVIDIA_SMI_Q],
        "smi_dmon": [names.NVIDIA_SMI_DMON],
        "topo": [names.NVIDIA_SMI_TOPO],
        "kernel_log": [names.DMESG],
    }
    if target in files:
        return [(BUNDLE / name).read_bytes() for name in files[target]]
    if target == "trt_log":
        return [TRT_SAMPLE]
    if target == "rule_file":
        return [p.read_bytes() for p in sorted((REPO / "rules").glob("*.yaml"))[:3]]
    if target == "site_config":
        return [b"expect_gpus: 8\ncheck_timeout_s: 10\notlp:\n  endpoint: http://127.0.0.1:4318\n"]
    if target == "state_file":
        return [json.dumps({"format": "sitscheck-state", "version": 1, "items": []}).encode()]
    if target == "bundle_tar":
        small = {
            f"bundle/{name}": (BUNDLE / name).read_bytes()
            for name in (names.NVIDIA_SMI_L, names.META_JSON, names.NVIDIA_SMI_TOPO)
        }
        return [tarball_of(small)]
    raise KeyError(target)


# ---- atheris (libFuzzer) drivers: tests/fuzz/atheris_*.py ---------------------------------------


def atheris_main(targets: list[str], argv: list[str] | None = None) -> None:
    """Fuzz `targets` coverage-guided until libFuzzer stops (-runs, -max_total_time, a crash).

    With several targets the first byte of an input picks one. An empty corpus folder (or, with
    none on the command line, one in the scratch folder) is seeded with real samples first.
    """
    import logging
    import sys

    import atheris

    logging.getLogger("sitscheck").addHandler(logging.NullHandler())  # moved-aside warnings
    args = list(sys.argv if argv is None else argv)
    folders = [arg for arg in args[1:] if not arg.startswith("-")]
    if not folders:
        folders = [str(scratch() / "corpus")]
        args.append(folders[0])
    corpus = Path(folders[0])
    corpus.mkdir(parents=True, exist_ok=True)
    if not any(corpus.iterdir()):  # start from real samples
        for index, name in enumerate(targets):
            for number, seed in enumerate(seeds(name)):
                prefix = bytes([index]) if len(targets) > 1 else b""
                (corpus / f"seed-{name}-{number}").write_bytes(prefix + seed)

    def one_input(data: bytes) -> None:
        if len(targets) == 1:
            TARGETS[targets[0]](data)
        elif data:
            TARGETS[targets[data[0] % len(targets)]](data[1:])

    atheris.Setup(args, one_input)
    atheris.Fuzz()
