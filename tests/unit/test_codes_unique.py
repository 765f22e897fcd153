"""Every finding code is listed once: a code table (`Codes`) and the Xid/SXid catalogue refuse
a code given twice when they are built, where a dict kept the second entry and silently
shadowed the first (its severity, meaning and action never seen)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from sitscheck.checks.xid import catalog
from sitscheck.contract import Codes, CodeSpec, Severity, unique_index
from sitscheck.contract.declarations import declaration_of
from sitscheck.contract.registry import BrokenCheck, discover


def test_a_code_table_refuses_a_code_listed_twice() -> None:
    first = CodeSpec("demo.x", Severity.WARNING, "first meaning", "first action")
    again = CodeSpec("demo.x", Severity.CRITICAL, "second meaning", "second action")
    with pytest.raises(ValueError, match=r"finding codes: 'demo\.x' is listed twice"):
        Codes([first, again])
    assert len(Codes([first])) == 1


def test_unique_index_keeps_the_order_and_names_the_table() -> None:
    assert unique_index(["b", "a"], str.upper, "letters") == {"B": "b", "A": "a"}
    with pytest.raises(ValueError, match="letters: 'A' is listed twice"):
        unique_index(["a", "b", "a"], str.upper, "letters")


@pytest.mark.parametrize(("table", "anchor"), [("Xid", "_XIDS"), ("SXid", "_SXIDS")])
def test_the_xid_catalogue_refuses_a_code_listed_twice_when_it_loads(
    table: str, anchor: str, tmp_path: Path
) -> None:
    """The catalogue's own source with its first entry written twice does not load."""
    source = Path(catalog.__file__).read_text()
    opening = f"{anchor}: tuple[XidInfo, ...] = (\n"
    first_code = catalog._XIDS[0].code if table == "Xid" else catalog._SXIDS[-1].code
    helper = "_x" if table == "Xid" else "_s"
    duplicate = f"    {helper}({first_code}, 'DUPLICATE', 'a second entry', 'info', 'none'),\n"
    assert source.count(opening) == 1
    copy = tmp_path / "catalog_copy.py"
    copy.write_text(source.replace(opening, opening + duplicate))
    spec = importlib.util.spec_from_file_location("catalog_copy", copy)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(ValueError, match=f"{table} catalogue: {first_code} is listed twice"):
        spec.loader.exec_module(module)


def test_every_checks_codes_are_listed_once_and_each_is_the_one_served() -> None:
    """Over every check's code table (the Xid catalogue's included): no code twice, and
    looking a code up gives the entry listed (nothing shadowed)."""
    checks = discover()
    assert not [c for c in checks if isinstance(c, BrokenCheck)], checks
    assert len(checks) >= 10
    for check in checks:
        table = declaration_of(check).codes
        specs = list(table)
        codes = [spec.code for spec in specs]
        assert len(codes) == len(set(codes)), (check.name, codes)
        for spec in specs:
            assert table.get(spec.code) == spec, (check.name, spec.code)
    xids = [info.code for info in catalog.catalog() if info.kind == "xid"]
    assert len(xids) > 50 and len(xids) == len(set(xids))
