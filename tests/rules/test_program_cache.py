"""The compiled CEL programs kept between runs (`engine.program_cache`, issue 19).

A program read back must behave as the one compiled from its text; the file is read only from
a folder and file of the user's own that nobody else may write; anything wrong with it costs
only the compiling; it holds the last run's programs, never more.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from sitscheck.engine.cache_file import default_folder
from sitscheck.engine.cel import GOOGLE, CelEnvironment
from sitscheck.engine.program_cache import FILE_NAME, ProgramCache

pytestmark = pytest.mark.skipif(
    find_spec("cel_expr_python") is None, reason="cel-expr-python not installed"
)

NODE = {"checks": {"xid": {"facts": {"count": 3}}}, "params": {"limit": 2}}
TEXTS = ("checks.xid.facts.count > params.limit", "[1, 2, 3].all(x, x > 0)", "'a' + 'b'")


def _env(folder: Path) -> CelEnvironment:
    return CelEnvironment(GOOGLE, keep_in=folder)


def _values(env: CelEnvironment, texts: tuple[str, ...] = TEXTS) -> list[Any]:
    scope = env.node_scope(NODE)
    return [env.evaluate(env.compile(text, "rules.yaml", 1), scope, None) for text in texts]


def _programs(folder: Path) -> dict[str, Any]:
    programs: dict[str, Any] = json.loads((folder / FILE_NAME).read_text())["programs"]
    return programs


def _private(tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700, parents=True)
    return folder


def test_programs_read_back_give_what_compiling_gives(tmp_path: Path) -> None:
    folder = _private(tmp_path)
    cold = _env(folder)
    compiled = _values(cold)
    assert cold.save_programs()
    warm = _env(folder)
    assert warm._kept is not None and warm._kept.held == len(TEXTS)
    assert _values(warm) == compiled == [True, True, "ab"]
    shapes = [warm.compile(text, "rules.yaml", 1).shape for text in TEXTS]
    assert shapes == [CelEnvironment(GOOGLE).compile(t, "r", 1).shape for t in TEXTS]
    assert not warm.save_programs()  # the same programs: nothing written


def _forged(folder: Path) -> None:
    """A cache in `folder` whose program for `1 == 2` is that of `1 == 1`."""
    env = _env(folder)
    env.compile("1 == 1", "rules.yaml", 1)
    assert env.save_programs()
    path = folder / FILE_NAME
    data = json.loads(path.read_text())
    data["programs"] = {"1 == 2": data["programs"]["1 == 1"]}
    path.write_text(json.dumps(data))


def _reads_back(folder: Path) -> bool:
    env = _env(folder)
    return bool(env.evaluate(env.compile("1 == 2", "rules.yaml", 1), env.node_scope({}), None))


def test_a_program_is_read_back_from_a_private_folder(tmp_path: Path) -> None:
    folder = _private(tmp_path)
    _forged(folder)
    assert _reads_back(folder)  # what the file says is what runs: hence the checks below


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_a_folder_others_may_write_is_neither_read_nor_written(tmp_path: Path, mode: int) -> None:
    folder = _private(tmp_path)
    _forged(folder)
    folder.chmod(mode)
    assert not _reads_back(folder)
    env = _env(folder)
    _values(env)
    assert not env.save_programs()
    assert set(_programs(folder)) == {"1 == 2"}


def test_a_file_others_may_write_is_not_read(tmp_path: Path) -> None:
    folder = _private(tmp_path)
    _forged(folder)
    (folder / FILE_NAME).chmod(0o666)
    assert not _reads_back(folder)


def test_a_link_in_place_of_the_file_is_not_followed(tmp_path: Path) -> None:
    folder = _private(tmp_path)
    elsewhere = _private(tmp_path / "other")
    _forged(elsewhere)
    (folder / FILE_NAME).symlink_to(elsewhere / FILE_NAME)
    assert not _reads_back(folder)


def test_another_engine_build_never_reads_the_file(tmp_path: Path) -> None:
    folder = _private(tmp_path)
    _forged(folder)
    path = folder / FILE_NAME
    data = json.loads(path.read_text())
    data["engine"] += " (another build)"
    path.write_text(json.dumps(data))
    assert not _reads_back(folder)


def _program_replaced(bad: str) -> Callable[[str], str]:
    """The file with the first text's program replaced by `bad`."""

    def damage(text: str) -> str:
        data = json.loads(text)
        data["programs"][TEXTS[0]][0] = bad
        return json.dumps(data)

    return damage


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # cut off
        lambda text: "not json",
        lambda text: json.dumps({"format": 99}),
        lambda text: text.replace('"programs": {', '"programs": {"x": 1, ', 1),
        _program_replaced("!!not base64!!"),
        _program_replaced("AAAA"),  # base64, but no program of the engine's
    ],
)
def test_a_damaged_file_costs_only_the_compiling(
    tmp_path: Path, damage: Callable[[str], str]
) -> None:
    folder = _private(tmp_path)
    env = _env(folder)
    expected = _values(env)
    env.save_programs()
    path = folder / FILE_NAME
    damaged = damage(path.read_text())
    path.write_text(damaged)
    again = _env(folder)
    assert _values(again) == expected
    assert again.save_programs()  # written anew, whole
    assert set(_programs(folder)) == set(TEXTS)
    assert path.read_text() != damaged


def test_the_file_holds_the_last_run_s_programs_only(tmp_path: Path) -> None:
    folder = _private(tmp_path)
    first = _env(folder)
    _values(first)
    first.save_programs()
    second = _env(folder)
    _values(second, (*TEXTS[:1], "2 > 1"))
    assert second.save_programs()
    assert set(_programs(folder)) == {TEXTS[0], "2 > 1"}


def test_a_folder_that_cannot_be_made_costs_nothing_but_the_keeping(tmp_path: Path) -> None:
    (tmp_path / "home").write_text("a file where the folder would be")
    env = _env(tmp_path / "home" / "sitscheck")
    assert _values(env) == [True, True, "ab"]
    assert not env.save_programs()


def test_the_folder_is_the_user_s_cache() -> None:
    assert default_folder({"XDG_CACHE_HOME": "/x/cache", "HOME": "/h"}) == Path(
        "/x/cache/sitscheck"
    )
    assert default_folder({"HOME": "/h"}) == Path("/h/.cache/sitscheck")
    assert default_folder({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == Path(
        "/h/.cache/sitscheck"
    )
    assert default_folder({}) is None
    unit = {"CACHE_DIRECTORY": "/var/cache/sitscheck:/var/cache/other", "HOME": "/h"}
    assert default_folder(unit) == Path("/var/cache/sitscheck")


def test_a_cache_made_in_a_new_folder_is_private(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "sitscheck"
    env = _env(folder)
    _values(env)
    assert env.save_programs()
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / FILE_NAME).stat().st_mode & 0o777 == 0o600
    assert ProgramCache(folder, "another build").held == 0


def test_every_recorded_bundle_gives_the_same_report_with_programs_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each bundle's facts and verdicts (`engine_snapshot`), a run with the programs
    compiled and the files parsed, and one with both read back (`tree_cache` too): the
    same."""
    from engine_snapshot import bundles, snapshot

    monkeypatch.setattr("sitscheck.engine.cel.default_engine", lambda: GOOGLE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    recorded = bundles(tmp_path / "bundles")
    cold = {name: snapshot(path) for name, path in recorded.items()}
    kept = _programs(tmp_path / "cache" / "sitscheck")
    assert len(kept) > 100  # the shipped rules' expressions
    assert (tmp_path / "cache" / "sitscheck" / "rule-trees.json").is_file()
    warm = {name: snapshot(path) for name, path in recorded.items()}
    assert warm == cold


def test_a_run_of_more_programs_than_are_kept_keeps_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sitscheck.engine.program_cache.MAX_PROGRAMS", 3)
    folder = _private(tmp_path)
    env = _env(folder)
    _values(env)  # three: as many as are kept
    assert env.save_programs()
    more = _env(folder)
    _values(more, (*TEXTS, "1 + 1 == 2"))
    assert not more.save_programs()
    assert set(_programs(folder)) == set(TEXTS)  # the last run that fitted
