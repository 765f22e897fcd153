"""The site file (`/etc/sitscheck/config.yaml` or `--config PATH`) read with the line of each
setting, and the run's configuration built from it under the command line's options: a
mistake is one line naming the file, the line and the key (`ConfigError`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import SITE_CONFIG, RunConfig, run_config
from .engine.yaml_lines import LinedDict, LinedList, line_of, parse_lined, read_capped
from .errors import ConfigError, RuleError
from .structs import Invalid


def load_site_config(path: Path | None) -> dict[str, Any]:
    """The site file's settings; {} when the default file is absent. Errors name the file.
    The mappings keep the line of each key (`yaml_lines`), for `build_config`'s errors."""
    target = path or SITE_CONFIG
    if not target.exists():
        if path is not None:
            raise ConfigError(f"{target}: no such config file")
        return {}
    try:
        data = parse_lined(target, read_capped(target).decode("utf-8"))
    except RuleError as exc:  # not YAML (the problem's words, never the line), an alias, ...
        raise ConfigError(str(exc)) from exc
    except OSError as exc:
        raise ConfigError(f"{target}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{target}: not UTF-8 text (byte {exc.start})") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{target}: expected a mapping of settings")
    return data


def build_config(site: dict[str, Any], overrides: dict[str, Any], source: str) -> RunConfig:
    """The site file's settings (`source` names it) under the options given: a setting that
    is not one or does not fit is a ConfigError of one line, `source[:line]: key: what`."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return run_config({**site, **given})
    except Invalid as exc:
        line = None if exc.path[:1] and exc.path[0] in given else _line(site, exc.path)
        where = f"{source}:{line}" if line is not None else source
        raise ConfigError(f"{where}: {exc}") from exc


def _line(site: Any, path: tuple[str | int, ...]) -> int | None:
    """The line of `path` in the site file, where its mappings kept their lines."""
    if not isinstance(site, LinedDict):
        return None
    container: Any = site
    for part in path[:-1]:
        inner = _entry(container, part)
        if not isinstance(inner, (LinedDict, LinedList)):
            break
        container = inner
    return line_of(container, path[-1] if path else None)


def _entry(container: Any, part: str | int) -> Any:
    if isinstance(container, dict):
        return container.get(part)
    if isinstance(container, list) and isinstance(part, int) and 0 <= part < len(container):
        return container[part]
    return None
