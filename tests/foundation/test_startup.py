"""Start-up: what `sitscheck checks` and `--help` import, and the entry-point reader behind them.

`sitscheck checks` must start in 1.5x a bare interpreter + 100 ms (issue 10): it imports
neither pydantic (typer 0.29 would build a TypeAdapter for every option, `--help` included:
pyproject takes typer below 0.29) nor `importlib.metadata` (the plugin reader reads
`entry_points.txt` itself).
"""

from __future__ import annotations

import importlib.metadata as metadata
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from sitscheck.contract import plugins
from sitscheck.contract.registry import discover

SLOW = (
    "pydantic",
    "importlib.metadata",
    "celpy",
    "cel_expr_python",
    "yaml",
    "rich",
    "pynvml",
    "opentelemetry",
)


def imported(tmp_path: Path, argv: list[str]) -> tuple[int, str, list[str]]:
    probe = (
        "import sys\n"
        f"sys.argv = ['sitscheck', *{argv!r}]\n"
        "from sitscheck.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
        f"slow = sorted(m for m in sys.modules if m.startswith({SLOW!r}))\n"
        "print('RESULT', code, ','.join(slow))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    *output, last = done.stdout.strip().splitlines()
    _, code, slow = [*last.split(" "), ""][:3]
    return int(code), "\n".join(output), [m for m in slow.split(",") if m]


@pytest.mark.parametrize("argv", [["checks"], ["--help"], ["--version"]])
def test_startup_commands_import_no_slow_module(tmp_path: Path, argv: list[str]) -> None:
    code, output, slow = imported(tmp_path, argv)
    assert code == 0, output
    assert slow == [], f"{argv} imported {slow}"
    if argv[-1] == "--help":
        assert "Usage:" in output


@pytest.mark.parametrize("argv", [["run", "--help"], ["rules", "--help"]])
def test_a_subcommands_help_imports_no_slow_module(tmp_path: Path, argv: list[str]) -> None:
    """typer 0.29 coerces every option of the command named through a pydantic TypeAdapter
    (~0.1 s); sitscheck takes typer below 0.29 (pyproject), whose options are click's own."""
    code, output, slow = imported(tmp_path, argv)
    assert code == 0, output
    assert "Usage:" in output
    assert slow == [], f"{argv} imported {slow}"


def test_the_import_probe_sees_slow_modules(tmp_path: Path) -> None:
    """Control: a command that needs the rules engine does import it, and the probe says so."""
    code, output, slow = imported(tmp_path, ["rules", "list"])
    assert code == 0, output
    assert {"celpy", "cel_expr_python"} & set(slow) and "yaml" in slow


IDLE = Path(__file__).resolve().parents[1] / "bundles" / "h200x2-idle-v1"


@pytest.mark.parametrize(
    "argv", [["run", "--from", str(IDLE), "-o", "json=/dev/null"], ["rules", "validate"]]
)
def test_a_run_and_rules_validate_import_one_cel_engine(tmp_path: Path, argv: list[str]) -> None:
    """At most one CEL implementation is imported by a run (issue 31 item 3): Google's where
    its wheel is installed, else celpy; the other is only the differential tests' oracle."""
    code, output, slow = imported(tmp_path, argv)
    assert code in (0, 1, 2), output
    assert len({m.split(".")[0] for m in slow} & {"celpy", "cel_expr_python"}) == 1, slow
    assert not [m for m in slow if m.startswith("pydantic")], slow  # one data-model library


def test_checks_lists_every_registered_check(tmp_path: Path) -> None:
    _code, output, _slow = imported(tmp_path, ["checks"])
    listed = [line.split()[0] for line in output.splitlines() if line.strip()]
    registered = sorted(e.name for e in metadata.entry_points(group="sitscheck.checks"))
    assert listed == registered
    assert "BROKEN" not in output


def test_a_bad_option_value_is_still_refused(tmp_path: Path) -> None:
    """A value that is given is checked; the mistake is one line and exit 3 (a usage error
    must not read as CRITICAL, issue 17)."""
    done = subprocess.run(
        [sys.executable, "-m", "sitscheck", "run", "--timeout", "soon", "--from", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3
    assert "Invalid value for '--timeout'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


# ---- the entry-point reader ----------------------------------------------------------------


def standard(group: str) -> list[tuple[str, str, str]]:
    return [(e.name, e.value, e.group) for e in metadata.entry_points(group=group)]


def read(group: str) -> list[tuple[str, str, str]] | None:
    found = plugins._read_entry_points(group)
    return None if found is None else [(e.name, e.value, e.group) for e in found]


def test_reader_agrees_with_importlib_metadata_on_every_group() -> None:
    groups = {ep.group for dist in metadata.distributions() for ep in dist.entry_points}
    for group in [*sorted(groups), "sitscheck.checks", "sitscheck.reporters", "no.such.group"]:
        assert read(group) == standard(group), group


def test_discover_loads_the_checks_through_the_reader() -> None:
    names = [getattr(found, "name", None) for found in discover()]
    assert names == sorted(e.name for e in metadata.entry_points(group="sitscheck.checks"))


def dist(folder: Path, stem: str, entry_points: str) -> None:
    info = folder / stem
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Name: {stem.split('-')[0]}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


def test_first_distribution_of_a_name_wins_and_the_file_syntax(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    dist(first, "Demo_Plugin-2.0.dist-info", "# comment\n[demo.group]\n a = pkg.mod:obj \n\n")
    dist(second, "demo.plugin-1.0.dist-info", "[demo.group]\nshadowed = pkg.other\n")
    dist(second, "other-1.0.dist-info", "[other]\nx = y\n[demo.group]\nb=pkg.b:C.d [extra]\n")
    (second / "single.egg-info").write_text("Name: single\n")  # a file: no entry points
    monkeypatch.setattr(sys, "path", [str(first), str(second), str(tmp_path / "absent")])
    assert read("demo.group") == standard("demo.group")
    assert read("demo.group") == [
        ("a", "pkg.mod:obj", "demo.group"),
        ("b", "pkg.b:C.d [extra]", "demo.group"),
    ]


def test_unusual_environments_go_through_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("zipped-1.0.dist-info/METADATA", "Name: zipped\nVersion: 1.0\n")
        zipped.writestr("zipped-1.0.dist-info/entry_points.txt", "[demo.group]\nz = zmod\n")
    monkeypatch.setattr(sys, "path", [str(archive)])
    assert read("demo.group") is None  # a zip on sys.path: not read here
    assert [(e.name, e.value) for e in plugins.entry_points("demo.group")] == [("z", "zmod")]

    folder = tmp_path / "bad"
    dist(folder, "bad-1.0.dist-info", "[demo.group]\nno equals sign\n")
    monkeypatch.setattr(sys, "path", [str(folder)])
    assert read("demo.group") is None
    with pytest.raises(Exception) as from_reader:
        plugins.entry_points("demo.group")
    with pytest.raises(Exception) as from_standard:
        metadata.entry_points(group="demo.group")
    assert type(from_reader.value) is type(from_standard.value)


def test_an_entry_point_loads_as_importlib_metadata_loads_it() -> None:
    value = "sitscheck.checks.driver.check:DriverCheck.metrics"
    ours = plugins.EntryPoint("driver", value, "g").load()
    assert ours is metadata.EntryPoint("driver", value, "g").load()
    module = plugins.EntryPoint("m", "sitscheck.status", "g").load()
    assert module is sys.modules["sitscheck.status"]
    for bad in ("not a value!", "sitscheck.no_such_module:X", "sitscheck.status:no_such_name"):
        with pytest.raises(Exception) as from_reader:
            plugins.EntryPoint("bad", bad, "g").load()
        with pytest.raises(Exception) as from_standard:
            metadata.EntryPoint("bad", bad, "g").load()
        assert str(from_reader.value) == str(from_standard.value)
        assert type(from_reader.value) is type(from_standard.value)
