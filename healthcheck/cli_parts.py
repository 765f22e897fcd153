"""What the command line's options share: help as an operator reads it, shell completion of
check and profile names, and the checks of a value that can be made before a run.

Kept apart from `cli` (which stays a list of commands) and cheap to import: completion looks
checks and profiles up only when the shell asks (never for `--help`), and reads no NVML, CEL
or OpenTelemetry module.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand


class Command(TyperCommand):
    """A command whose help names each argument by its metavar (`DIRECTORY`, `[FILES]...`),
    never by its Python type: typer ≥ 0.2x appends the annotation (`<path>`,
    `<list[Path]>`, `<str>`) to arguments even where a metavar is given."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(_usage(param))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        params = self.get_params(ctx)
        arguments = [
            (_metavar(p), _argument_help(p)) for p in params if p.param_type_name == "argument"
        ]
        options = [
            record
            for p in params
            if p.param_type_name == "option" and (record := p.get_help_record(ctx)) is not None
        ]
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _metavar(param: Any) -> str:
    name = str(param.metavar or (param.name or "").upper())
    return f"{name}..." if param.nargs != 1 else name


def _usage(param: Any) -> str:
    return _metavar(param) if param.required else f"[{_metavar(param)}]"


def _argument_help(param: Any) -> str:
    text = str(getattr(param, "help", None) or "")
    return f"{text}  [required]".strip() if param.required else text


# ------------------------------------------------------------------------- completion


def complete_checks(incomplete: str) -> list[tuple[str, str]]:
    """The installed checks (built-in and plugins') whose name starts with `incomplete`."""
    try:
        from .contract.registry import discover

        found = [(c.name, str(getattr(c, "summary", "") or "")) for c in discover()]
    except Exception:  # a completion never prints a traceback into the shell
        return []
    return [(name, summary) for name, summary in found if name.startswith(incomplete)]


def complete_profiles(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """The hardware profiles (shipped, plugins', and those of `--rules` folders already on the
    line) whose name starts with `incomplete`."""
    try:
        from .engine.loader import load_profiles

        dirs = [Path(d) for d in (ctx.params.get("rules") or [])]
        profiles = load_profiles(dirs)
    except Exception:
        return []
    return [
        (name, Path(profile.file).name)
        for name, profile in sorted(profiles.items())
        if name.startswith(incomplete)
    ]


# ------------------------------------------------------------------------- values


def existing_folder(value: str | None) -> str | None:
    """`--sys-root`: a folder that exists; otherwise one line naming the option, exit 3 (a
    mistyped root read nothing: the node looked as if it had no RDMA device, exit 0)."""
    if value is not None and not Path(value).is_dir():
        why = "not a folder" if Path(value).exists() else "no such folder"
        raise typer.BadParameter(f"{value}: {why}")
    return value


def at_least_one_second(value: float) -> float:
    """`daemon --interval`: at least 1 (said in the help's words, not click's `x>=1.0`)."""
    if not 1.0 <= value < math.inf:  # nan and inf too
        raise typer.BadParameter(f"{value:g}: give seconds, at least 1")
    return value
