"""Untrusted text never reaches a terminal (or a CI page, a dashboard, a journal) raw.

A kernel-log line and a TensorRT build log are written by users' jobs; a bundle (its files,
its GPU names, its path) by whoever sent it. Carrying ESC/CSI/OSC sequences, BEL, CR, C1
controls or bidi overrides, shown raw they could clear the screen and print a fake
``OK — 11 of 11 checks ran`` over a critical report. Every human-facing output shows them
escaped (`sitscheck.printable`); the JSON report keeps the exact text.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.daemon.run_line import failed_line, run_line
from sitscheck.models import CheckResult, Device, Finding, Report, Severity, Status
from sitscheck.printable import printable, printable_lines, printable_text
from sitscheck.reporters.table import render_rich

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "bundles" / "h200x2-idle-v1"
# Clear the screen, home the cursor, retitle the terminal, an OSC 8 hyperlink, the fake all-
# clear, a CR back over it, bidi overrides and isolates, an 8-bit CSI, a right-to-left mark.
HOSTILE = (
    "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]8;;http://evil.example\x1b\\OK \u2014 11 of 11 checks "
    "ran\r\u202eevil\u202a\u2066x\u2069\x9b31m\u200f\x7f"
)
XID_LINE = (
    "3,401,5200000000,-;NVRM: Xid (PCI:0000:00:07): 79, pid='<unknown>', name=<unknown>, "
    f"GPU has fallen off the bus. {HOSTILE}\n"
)
TRT_LINE = f"[E] [TRT] 3: [builder.cpp::build::123] Error Code 3: API Usage Error ({HOSTILE})\n"
# What rich itself writes on a terminal: SGR colour codes, nothing else.
SGR = re.compile(r"\x1b\[[0-9;]*m")


def raw_controls(text: str) -> list[str]:
    """The characters of `text` a terminal would obey: neither printable nor a newline."""
    return sorted({repr(ch) for ch in text if not ch.isprintable() and ch != "\n"})


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real recording whose kernel log, TensorRT log and GPU names carry the sequences."""
    bundle = tmp_path_factory.mktemp("hostile") / "node"
    shutil.copytree(RECORDED, bundle)
    dmesg = bundle / "dmesg.txt"
    dmesg.write_text(dmesg.read_text(encoding="utf-8") + XID_LINE, encoding="utf-8")
    (bundle / "tensorrt").mkdir()
    (bundle / "tensorrt" / "build.log").write_text(TRT_LINE, encoding="utf-8")
    for name in ("nvidia-smi-L.txt", "nvidia-smi-q.txt", "nvidia-smi-query-gpu.csv"):
        path = bundle / name
        path.write_text(path.read_text().replace("NVIDIA H200", "NVIDIA H200\x1b[5m\u202e"))
    nvml = bundle / "nvml.json"
    nvml.write_text(nvml.read_text().replace("NVIDIA H200", "NVIDIA H200\\u001b[5m\\u202e"))
    return bundle


def sitscheck(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("sitscheck")
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "sitscheck"]
    env = {**os.environ, "COLUMNS": "100"}
    return subprocess.run(
        [*argv, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env, check=False
    )


@pytest.mark.parametrize(
    "output",
    [["-o", "table"], ["-o", "text"], ["-o", "text", "-v"], ["-v"], ["-o", "npd"]],
    ids=["table", "text", "text-verbose", "default-verbose", "npd"],
)
def test_no_raw_control_or_bidi_character_reaches_stdout_or_stderr_installed_cli(
    hostile: Path, tmp_path: Path, output: list[str]
) -> None:
    done = sitscheck("run", "--from", str(hostile), *output, cwd=tmp_path)
    critical = 1 if "npd" in output else 2  # NPD's NonOK, else Nagios's CRITICAL
    assert done.returncode == critical, done.stdout + done.stderr  # the lost GPU is critical
    assert raw_controls(done.stdout) == [] and raw_controls(done.stderr) == []
    if "npd" in output:
        assert len(done.stdout.splitlines()) == 1 and done.stdout.isascii()
        return
    assert "OK \u2014 11 of 11 checks ran" not in done.stdout.splitlines()[0]
    assert "\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07" in done.stdout  # the text is shown, escaped
    assert "\\r\\u202eevil" in done.stdout  # the CR and the override as escapes
    if "-v" in output:
        assert "| 5200.000000 0000:00:07.0 Xid 79: GPU has fallen off the bus. \\x1b[2J" in (
            done.stdout
        )


def test_the_json_report_keeps_the_exact_text_installed_cli(hostile: Path, tmp_path: Path) -> None:
    done = sitscheck("run", "--from", str(hostile), "-o", "json", cwd=tmp_path)
    report: dict[str, Any] = json.loads(done.stdout)
    findings = {f["code"]: f for c in report["checks"] for f in c["findings"]}
    assert findings["xid.79"]["message"].endswith(f"Last: GPU has fallen off the bus. {HOSTILE}")
    assert findings["xid.79"]["evidence"][0]["excerpt"].endswith(HOSTILE)
    assert HOSTILE.split("\r")[0] in findings["tensorrt.build_failed"]["message"]
    driver = next(c for c in report["checks"] if c["name"] == "driver")
    assert driver["facts"]["gpus"][0]["name"] == "NVIDIA H200\x1b[5m\u202e"


def test_junit_and_prometheus_files_hold_no_raw_control_installed_cli(
    hostile: Path, tmp_path: Path
) -> None:
    junit, prom = tmp_path / "report.xml", tmp_path / "textfile"
    done = sitscheck(
        "run", "--from", str(hostile), "-v", "-o", f"junit={junit}", "-o", f"prom={prom}",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    xml_text = junit.read_text(encoding="utf-8")
    assert raw_controls(xml_text) == []
    root = ET.fromstring(xml_text)  # well-formed XML 1.0
    failures = "\n".join(f.text or "" for f in root.iter("failure"))
    assert "Last: GPU has fallen off the bus. \\x1b[2J" in failures
    prom_text = (prom / "sitscheck.prom").read_text(encoding="utf-8")
    assert raw_controls(prom_text) == []
    assert 'model_name="NVIDIA H200\\\\x1b[5m\\\\u202e"' in prom_text  # the GPU name, escaped


def test_the_terminal_table_escapes_log_text_and_never_reads_it_as_markup(
    hostile: Path, tmp_path: Path
) -> None:
    """On a TTY the table is rich's: a log line holding `[/x]` or `[link=...]` is text (rich's
    markup parser refused the first and the whole report was lost)."""
    bundle = tmp_path / "node"
    shutil.copytree(hostile, bundle)
    with (bundle / "dmesg.txt").open("a", encoding="utf-8") as out:
        out.write(
            "3,402,5200000080,-;NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, "
            "GPU has fallen [/x] [bold red]off[/bold red] [link=http://evil.example]bus[/link]\n"
        )
    report = execute(RunRequest(RunConfig(), str(bundle)))
    shown = render_rich(report, verbose=True, width=400)
    assert raw_controls(SGR.sub("", shown)) == []
    assert "[/x] [bold red]off[/bold red] [link=http://evil.example]bus[/link]" in shown
    assert "\\x1b[2J\\x1b[H" in shown


def test_error_lines_quoting_a_bundle_path_or_a_rule_file_are_printable_installed_cli(
    tmp_path: Path,
) -> None:
    missing = sitscheck("run", "--from", str(tmp_path / f"sent{HOSTILE}"), cwd=tmp_path)
    assert missing.returncode == 3
    assert raw_controls(missing.stderr) == [] and "sent\\x1b[2J" in missing.stderr
    rules = tmp_path / "site-rules"
    rules.mkdir()
    (rules / "site.yaml").write_text(
        "rules:\n"
        "  - id: site.hostile\n"
        f"    description: {json.dumps('fires' + HOSTILE)}\n"
        "    severity: warning\n"
        "    requires: [driver]\n"
        "    when: checks.driver.facts.gpu_count > 100\n"
        f"    message: {json.dumps('too many GPUs' + HOSTILE)}\n",
        encoding="utf-8",
    )
    explained = sitscheck("explain", "site.hostile", "--rules", str(rules), cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr
    assert raw_controls(explained.stdout) == [] and "fires\\x1b[2J" in explained.stdout


def test_the_daemon_run_line_is_one_printable_line() -> None:
    finding = Finding(
        code=f"plugin.code{HOSTILE}",
        severity=Severity.CRITICAL,
        message="m",
        device=Device(index=1),
        state="new",
    )
    report = Report(
        sitscheck_version="0.1.0",
        host="node",
        started_at="2026-11-30T12:00:00+00:00",
        duration_s=0.1,
        status=Status.CRITICAL,
        headline=f"CRITICAL \u2014 checks: plugin{HOSTILE}",
        mode="live",
        checks=[CheckResult(name="plugin", status=Status.CRITICAL, findings=[finding])],
    )
    line = run_line(3, report, 4.25)
    assert raw_controls(line) == [] and "\n" not in line
    assert line.startswith("sitscheck daemon: run 3 (4.2s): CRITICAL \u2014 checks: plugin\\x1b")
    assert "new: plugin.code\\x1b[2J" in line and line.endswith("(GPU 1)")
    failed = failed_line(4, 0.5, f"bundle\n{HOSTILE}")
    assert raw_controls(failed) == [] and "\n" not in failed


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain — ×3 é 日本", "plain — ×3 é 日本"),
        ("tab\tkept", "tab\tkept"),
        ("\x1b[2J", "\\x1b[2J"),
        ("bell\x07", "bell\\x07"),
        ("a\rb", "a\\rb"),
        ("a\nb", "a\\nb"),
        ("\x00\x7f\x85\x9b", "\\x00\\x7f\\x85\\x9b"),
        ("\u202a\u202b\u202c\u202d\u202e", "\\u202a\\u202b\\u202c\\u202d\\u202e"),
        ("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),
        ("\u200e\u200f\u061c\u2028\u2029\ufeff", "\\u200e\\u200f\\u061c\\u2028\\u2029\\ufeff"),
        ("\udcff", "\\udcff"),  # an undecodable byte kept by surrogateescape
        ("\U000e0041", "\\U000e0041"),  # a tag character
    ],
)
def test_printable_escapes_what_a_terminal_would_obey(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert printable(shown) == shown  # once printable, unchanged


def test_printable_lines_split_at_newlines_only() -> None:
    assert printable_lines("") == []
    assert printable_lines("a\r\nb\n") == ["a", "b"]  # CRLF is a line end
    assert printable_lines("a\rb\x0bc\u2028d") == ["a\\rb\\x0bc\\u2028d"]  # never a line break
    assert printable_text("a\x1b\nb\n") == "a\\x1b\nb\n"


def test_every_character_comes_out_printable_or_a_tab() -> None:
    """The whole Basic Multilingual Plane and the first supplementary ones, surrogates too."""
    for start in range(0, 0x30000, 0x1000):
        block = "".join(chr(code) for code in range(start, start + 0x1000))
        shown = printable(block)
        assert all(ch.isprintable() or ch == "\t" for ch in shown), hex(start)
        assert shown.encode("utf-8")  # writable to any UTF-8 terminal or file
