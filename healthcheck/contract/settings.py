"""Each check's own config section (`check_config: {NAME: {...}}` in config.yaml), validated
by the model (a msgspec Struct) the check declares as its `config`. A section for no selected check,
or one that does not validate, is the user's mistake: ConfigError naming the key."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import ConfigError
from .declarations import declaration_of, resolve


def check_settings(checks: Iterable[Any], sections: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each declaring check's validated settings (its model's defaults where no section)."""
    from msgspec import Struct

    from ..structs import Invalid, convert

    loaded = [c for c in checks if hasattr(c, "collect")]
    names = {c.name for c in loaded}
    stray = sorted(set(sections) - names)
    if stray:
        raise ConfigError(
            f"check_config.{stray[0]}: no such check selected (known: {', '.join(sorted(names))})"
        )
    settings: dict[str, Any] = {}
    for check in loaded:
        reference = declaration_of(check).config
        section = sections.get(check.name)
        if reference is None:
            if section:
                raise ConfigError(f"check_config.{check.name}: the check takes no settings")
            continue
        model = resolve(reference)
        if not (isinstance(model, type) and issubclass(model, Struct)):
            raise ConfigError(f"check {check.name}: its config {reference} is not a model")
        try:
            settings[check.name] = convert(section or {}, model, strict=False)
        except Invalid as exc:
            where = ".".join(["check_config", check.name, *map(str, exc.path)])
            raise ConfigError(f"{where}: {exc.what}") from exc
    return settings
