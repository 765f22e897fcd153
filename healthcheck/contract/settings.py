"""Each check's own config section (`check_config: {NAME: {...}}` in config.yaml), validated
by the pydantic model the check declares as its `config`. A section for no selected check,
or one that does not validate, is the user's mistake: ConfigError naming the key."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import ConfigError
from .declarations import declaration_of, resolve


def check_settings(checks: Iterable[Any], sections: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each declaring check's validated settings (its model's defaults where no section)."""
    from pydantic import BaseModel, ValidationError

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
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ConfigError(f"check {check.name}: its config {reference} is not a model")
        try:
            settings[check.name] = model(**(section or {}))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ConfigError(f"check_config.{check.name}.{where}: {err['msg']}") from exc
    return settings
