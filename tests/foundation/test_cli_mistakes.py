"""A user's mistake on the command line or in a site file: one clear line naming the option,
file or line, and exit 3 (never 2, which Nagios, Slurm and NPD read as CRITICAL, and never a
silent run that checks less than asked). Through the installed CLI where a run is made; the
command line's own answers (usage errors, help, completion) through the console script's
function in this process (`command_line`), which is what the installed command calls."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_cli_e2e import sitscheck

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tests" / "bundles" / "h200x2-idle-v1"


CommandLine = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> CommandLine:
    """`sitscheck ARGS` answered by `sitscheck.cli.main` in this process, from `tmp_path`:
    its exit code, stdout and stderr, as a child's would be (no interpreter started)."""
    from sitscheck import cli

    monkeypatch.chdir(tmp_path)

    def call(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(sys, "argv", ["sitscheck", *args])
        capsys.readouterr()
        with pytest.raises(SystemExit) as ended:
            cli.main()
        out, err = capsys.readouterr()
        code = ended.value.code
        return subprocess.CompletedProcess(sys.argv, code if isinstance(code, int) else 0, out, err)

    return call


def one_line_exit_3(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    code = done.returncode
    err = done.stderr
    assert code == 3, (code, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--bogus"], ["--bogus"]),
        (["run", "--bogus"], ["--bogus", "sitscheck run"]),
        (["run", "--timeout", "abc"], ["--timeout"]),
        (["explain"], ["code"]),
        (["daemon", "--interval", "0"], ["--interval"]),
        (["daemon", "--interval", "inf", "-o", "json=r.json", "--state-dir", "s"], ["--interval"]),
        (["run", "--from", ""], ["--from"]),
    ],
)
def test_a_usage_error_is_one_line_and_exit_3(
    command_line: CommandLine, argv: list[str], needles: list[str]
) -> None:
    one_line_exit_3(command_line(*argv), *needles)


def test_rules_that_do_not_exist_are_refused(tmp_path: Path) -> None:
    done = sitscheck("run", "--from", str(BUNDLE), "--rules", "/nonexistent", cwd=tmp_path)
    one_line_exit_3(done, "--rules /nonexistent")


def test_a_misspelled_site_param_names_its_file_line_and_the_known_name(tmp_path: Path) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("# site thresholds\nparams:\n  nvlink_crc_per_sec_max: 5\n")
    done = sitscheck("run", "--from", str(BUNDLE), "--rules", str(site), cwd=tmp_path)
    one_line_exit_3(done, f"{site}:3", "nvlink_crc_per_sec_max", "nvlink_crc_per_s_max")


def test_a_site_param_that_a_site_rule_reads_is_accepted(tmp_path: Path) -> None:
    site = tmp_path / "site.yaml"
    site.write_text(
        "params:\n  site_max_gpus: 64\nrules:\n  - id: site.many_gpus\n    scope: node\n"
        "    when: node.gpu_count > params.site_max_gpus\n    severity: warning\n"
        "    message: too many GPUs\n"
    )
    done = sitscheck("run", "--from", str(BUNDLE), "--rules", str(site), cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_selecting_no_check_is_refused(tmp_path: Path) -> None:
    done = sitscheck("run", "--from", str(BUNDLE), "--check", "xid", "--skip", "xid", cwd=tmp_path)
    one_line_exit_3(done, "no check selected")


def test_collect_refuses_a_file_and_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    one_line_exit_3(sitscheck("collect", str(afile), cwd=tmp_path), str(afile), "not a folder")
    full = tmp_path / "old-bundle"
    shutil.copytree(BUNDLE, full)
    one_line_exit_3(sitscheck("collect", str(full), cwd=tmp_path), str(full), "not empty")
    assert sorted(p.name for p in full.iterdir()) == sorted(p.name for p in BUNDLE.iterdir())


def test_h_is_help_and_completion_is_offered(command_line: CommandLine) -> None:
    done = command_line("-h")
    assert done.returncode == 0 and "Usage:" in done.stdout
    assert "--install-completion" in done.stdout and "--show-completion" in done.stdout
    done = command_line("run", "-h")
    assert done.returncode == 0
    assert "<list[str]>" not in done.stdout and "<float>" not in done.stdout
    assert "npd" in done.stdout


def test_the_replay_header_says_when_the_bundle_was_recorded(tmp_path: Path) -> None:
    done = sitscheck("run", "--from", str(BUNDLE), "-o", "text", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    header = done.stdout.splitlines()[1]
    assert "recorded 2026-11-29T20:42:44+00:00" in header and "host vm" in header


def test_the_terminal_report_fits_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    from sitscheck.app import RunRequest, execute
    from sitscheck.config import RunConfig
    from sitscheck.reporters.table import render_rich

    monkeypatch.setenv("COLUMNS", "80")  # what a terminal of 80 columns tells its programs
    report = execute(RunRequest(RunConfig(), bundle=str(BUNDLE)))
    text = render_rich(report, verbose=True)
    import re

    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert max(len(line) for line in plain.splitlines()) <= 80


HELPS = [[], ["run"], ["daemon"], ["checks"], ["collect"], ["explain"], ["schema"]]
HELPS += [["rules"], ["rules", "validate"], ["rules", "list"]]


@pytest.mark.parametrize("command", HELPS, ids=lambda c: " ".join(c) or "sitscheck")
def test_help_shows_metavars_not_python_types_in_80_columns(
    command_line: CommandLine, command: list[str]
) -> None:
    """Typer ≥ 0.2x wrote an argument's annotation beside it (`files... <list[Path]>`,
    `directory <path>`, `code <str>`, usage `{directory}`) and click its range (`x>=1.0`)."""
    done = command_line(*command, "--help", env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    assert re.search(r"<[\w\[\], |]+>|\{\w+\}|x>=", done.stdout) is None, done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80, done.stdout
    usage = done.stdout.splitlines()[0]
    wanted = {"collect": "DIRECTORY", "explain": "CODE", "validate": "[FILES...]"}
    assert wanted.get(command[-1] if command else "", "") in usage


def completions(command_line: CommandLine, line: str) -> list[str]:
    """What bash completion offers for the last word of `line` (click's protocol)."""
    words = line.split(" ")
    env = {"_SITSCHECK_COMPLETE": "complete_bash", "COMP_WORDS": line}
    env["COMP_CWORD"] = str(len(words) - 1)
    done = command_line(env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_completion_offers_check_and_profile_names(command_line: CommandLine) -> None:
    from sitscheck.contract.registry import discover
    from sitscheck.engine.loader import load_profiles

    checks = sorted(c.name for c in discover())
    assert completions(command_line, "sitscheck run --check ") == checks
    assert completions(command_line, "sitscheck run --skip nv") == ["nvlink"]
    assert completions(command_line, "sitscheck schema --facts x") == ["xid"]
    profiles = sorted(name for name in load_profiles([]) if name.startswith("h"))
    assert profiles and completions(command_line, "sitscheck run --profile h") == profiles


@pytest.mark.parametrize(
    "command",
    [
        ["run", "-o", "json=r.json"],
        ["collect", "new-bundle"],
        ["daemon", "-o", "json=r.json", "--state-dir", "state"],
    ],
    ids=["run", "collect", "daemon"],
)
@pytest.mark.parametrize("root", ["/nonexistent", "a-file"])
def test_a_sys_root_that_is_no_folder_is_refused_naming_the_option(
    command_line: CommandLine, tmp_path: Path, command: list[str], root: str
) -> None:
    """`--sys-root /nonexistent` ran, read nothing and passed: the node looked as if it had
    no RDMA device (exit 0)."""
    (tmp_path / "a-file").write_text("not a sysfs\n")
    one_line_exit_3(command_line(*command, "--sys-root", root), "--sys-root", root)
    assert {p.name for p in tmp_path.iterdir()} == {"a-file"}  # nothing run, nothing written


def test_a_live_only_option_with_from_says_it_is_not_read(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text("[E] [TRT] Error Code 2: Internal Error\n")
    done = sitscheck("run", "--from", str(BUNDLE), "--trt-log", str(log), "-o", "npd", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # the bundle's evidence alone is judged
    assert done.stderr.splitlines() == [
        "sitscheck run: warning: --trt-log is not read with --from (a replay reads the bundle's "
        "own evidence; record it with `sitscheck collect --trt-log`)"
    ]


def test_npd_among_several_outputs_gives_npd_exit_codes_as_the_help_says(tmp_path: Path) -> None:
    """Kept on purpose (NPD reads the code whenever it asked for its line; a textfile added
    beside it must not turn NonOK 1 into 2, which NPD reads as Unknown), and said in `--help`
    and the README."""
    bundle = tmp_path / "node"
    shutil.copytree(BUNDLE, bundle)
    dmesg = bundle / "dmesg.txt"
    xid = "3,401,5200000000,-;NVRM: Xid (PCI:0000:00:07): 79, pid=1, name=x, GPU has fallen off\n"
    dmesg.write_text(dmesg.read_text() + xid)
    report = tmp_path / "report.txt"
    done = sitscheck(
        "run", "--from", str(bundle), "-o", "npd", "-o", f"text={report}", cwd=tmp_path
    )
    assert done.returncode == 1 and done.stdout.startswith("critical: ")
    assert sitscheck("run", "--from", str(bundle), cwd=tmp_path).returncode == 2
    helped = " ".join(
        sitscheck("run", "--help", cwd=tmp_path, env={"COLUMNS": "200"}).stdout.split()
    )
    assert "With npd among them the exit code is NPD's for the whole run" in helped
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert "exit code is NPD's for the whole run" in readme
