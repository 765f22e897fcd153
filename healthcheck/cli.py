"""The command line (typer), kept thin: parse options, call the app, map errors to exit codes.

Heavy modules (NVML, OpenTelemetry, rich tables, the rules engine) are imported inside the
commands that need them, so `sitscheck --help` and `--version` start fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from . import __version__
from .cli_parts import (
    Command,
    at_least_one_second,
    complete_checks,
    complete_profiles,
    existing_folder,
)
from .errors import SitscheckError
from .printable import printable

EXIT_UNKNOWN = 3


class _Group(TyperGroup):
    pass


class _Command(Command):
    pass


HELP = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    cls=_Group,
    add_completion=True,
    context_settings=HELP,
    no_args_is_help=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help=(
        "Node health checks for GPU inference nodes (exit 0 ok, 1 warning, 2 critical, 3 unknown;"
        " with -o npd, NPD's: 0 ok or warning, 1 critical, 2 unknown)."
    ),
)
rules_app = typer.Typer(
    cls=_Group,
    help="Validate and list rule files.",
    rich_markup_mode=None,
    context_settings=HELP,
)
app.add_typer(rules_app, name="rules")


def _check_names(flag: str, help_text: str) -> Any:
    """An option naming checks, completed from the installed ones."""
    return typer.Option(flag, metavar="NAME", help=help_text, autocompletion=complete_checks)


CheckOpt = Annotated[list[str] | None, _check_names("--check", "Run only this check (repeatable).")]
SkipOpt = Annotated[list[str] | None, _check_names("--skip", "Skip this check (repeatable).")]
OUTPUTS = (
    "table | text | json[=PATH] | junit=PATH | npd | prom=DIR | html=PATH, or a plugin's "
    "(repeatable)."
)
OutputOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--output",
        "-o",
        metavar="NAME[=PATH]",
        help=f"{OUTPUTS} With npd among them the exit code is NPD's for the whole run: 0 ok or "
        "warning, 1 critical, 2 unknown.",
    ),
]
DaemonOutputOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--output",
        "-o",
        metavar="NAME[=PATH]",
        help=f"{OUTPUTS[:-1]}; default prom=/var/lib/node_exporter/textfile_collector.",
    ),
]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Show evidence.")]
TimeoutOpt = Annotated[
    float | None,
    typer.Option("--timeout", metavar="SECONDS", help="Deadline of each check (default 20)."),
]
RunTimeoutOpt = Annotated[
    float | None,
    typer.Option("--run-timeout", metavar="SECONDS", help="Deadline of the run (default 45)."),
]
SampleOpt = Annotated[
    float | None,
    typer.Option("--sample-seconds", metavar="SECONDS", help="GPU sampling window (default 3)."),
]
ExpectOpt = Annotated[
    int | None, typer.Option("--expect-gpus", metavar="N", help="GPUs this node must have.")
]
ProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--profile",
        metavar="NAME",
        help="Hardware profile (default: chosen by GPU).",
        autocompletion=complete_profiles,
    ),
]
RulesOpt = Annotated[
    list[Path] | None,
    typer.Option("--rules", metavar="PATH", help="Extra rule directory or file (repeatable)."),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", metavar="FILE", help="Site config (/etc/sitscheck/config.yaml)."),
]
FromOpt = Annotated[
    str | None,
    typer.Option("--from", metavar="BUNDLE", help="Replay a node bundle (folder or .tar.gz)."),
]
TrtOpt = Annotated[
    list[str] | None,
    typer.Option("--trt-log", metavar="PATH", help="TensorRT build log path or glob (repeatable)."),
]
LoadOpt = Annotated[bool, typer.Option("--load", help="Keep the GPUs busy while sampling.")]
BandwidthOpt = Annotated[
    bool,
    typer.Option("--bandwidth", help="Measure PCIe, HBM and peer bandwidth (part of --load)."),
]
SysRootOpt = Annotated[
    str | None,
    typer.Option(
        "--sys-root", metavar="DIR", help="sysfs root (default /sys).", callback=existing_folder
    ),
]
OtlpOpt = Annotated[
    str | None,
    typer.Option("--otlp", metavar="URL", help="Send the run over OTLP to this endpoint."),
]
StateDirOpt = Annotated[
    Path | None,
    typer.Option("--state-dir", metavar="DIR", help="State and spool folder (/var/lib/sitscheck)."),
]
DaemonOpt = Annotated[
    bool,
    typer.Option("--daemon", help="Timer mode: report what is new since the last run (state dir)."),
]
TrtProbeOpt = Annotated[
    bool, typer.Option("--trt-probe", help="Build a tiny TensorRT engine on each GPU.")
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sitscheck {__version__}")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def main_callback(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    if ctx.invoked_subcommand is None:
        run()


@app.command(cls=_Command)
def run(
    check: CheckOpt = None,
    skip: SkipOpt = None,
    output: OutputOpt = None,
    verbose: VerboseOpt = False,
    timeout: TimeoutOpt = None,
    run_timeout: RunTimeoutOpt = None,
    sample_seconds: SampleOpt = None,
    expect_gpus: ExpectOpt = None,
    profile: ProfileOpt = None,
    rules: RulesOpt = None,
    config: ConfigOpt = None,
    bundle: FromOpt = None,
    trt_log: TrtOpt = None,
    load: LoadOpt = False,
    bandwidth: BandwidthOpt = False,
    sys_root: SysRootOpt = None,
    otlp: OtlpOpt = None,
    state_dir: StateDirOpt = None,
    trt_probe: TrtProbeOpt = False,
    daemon: DaemonOpt = False,
) -> None:
    """Run the checks once, print the report, exit with its status."""
    overrides: dict[str, Any] = {
        "checks": check or None,
        "skip": skip or None,
        "check_timeout_s": timeout,
        "run_timeout_s": run_timeout,
        "sample_seconds": sample_seconds,
        "expect_gpus": expect_gpus,
        "profile": profile,
        "rules_dirs": rules or None,
        "trt_logs": trt_log or None,
        "load": load or None,
        "bandwidth": bandwidth or None,
        "verbose": verbose or None,
        "sys_root": sys_root,
        "state_dir": state_dir,
        "trt_probe": trt_probe or None,
        "daemon": daemon or None,
    }
    if bundle is not None and not bundle.strip():
        typer.echo("sitscheck run: --from needs a bundle folder or .tar.gz, not ''", err=True)
        raise typer.Exit(EXIT_UNKNOWN)
    if bundle is not None:
        _not_read_with_from({"--trt-log": trt_log, "--sys-root": sys_root})
    raise typer.Exit(_guarded(lambda: _run(overrides, config, bundle, output or [], otlp)))


def _not_read_with_from(given: dict[str, Any]) -> None:
    """Options that read the live node, given with --from: one warning line each (a replay
    reads the bundle's own tensorrt/ and sysfs/ folders), never a silent no-op."""
    for option, value in given.items():
        if value:
            _say(
                f"sitscheck run: warning: {option} is not read with --from (a replay reads the "
                "bundle's own evidence; record it with `sitscheck collect " + option + "`)"
            )


def _run(
    overrides: dict[str, Any],
    config_path: Path | None,
    bundle: str | None,
    outputs: list[str],
    otlp: str | None,
) -> int:
    from .app import RunRequest
    from .reporters.outputs import parse_outputs

    config = _config(overrides, config_path)
    specs = parse_outputs(outputs)
    otlp_settings = _otlp_settings(config, otlp)
    return _run_once(config, RunRequest(config, bundle), specs, otlp_settings)


def _otlp_settings(config: Any, otlp: str | None) -> Any:
    """The export settings; a malformed OTEL_* variable or `otlp:` key is one warning line
    (here, once) and is ignored; only a malformed `--otlp` fails, before anything runs."""
    import os

    from .export.settings import resolve_settings

    settings = resolve_settings(config.otlp, otlp, os.environ)
    for warning in settings.warnings:
        typer.echo(f"sitscheck: warning: {warning}", err=True)
    return settings


def _run_once(config: Any, request: Any, specs: Any, otlp_settings: Any) -> int:
    from .interrupt import interruptible

    with interruptible() as interrupt:  # SIGTERM/SIGINT: partial report, children killed
        report = _execute_and_deliver(config, request, specs, otlp_settings)
    return _exit_code(report, specs, interrupt)


def _exit_code(report: Any, specs: Any, interrupt: Any) -> int:
    """A run's exit code (`run` and `accept` alike): the report's, or NPD's for the whole run
    where npd is among the outputs; after a signal, the line that says which."""
    if interrupt.triggered:  # the exit code is the report's, which says so (interrupt.settle)
        typer.echo(f"sitscheck: interrupted by {interrupt.signal_name}", err=True)
    if any(spec.name == "npd" for spec in specs):
        from .reporters.npd import npd_exit_code

        return npd_exit_code(report)
    return int(report.exit_code)


def _execute_and_deliver(config: Any, request: Any, specs: Any, otlp_settings: Any) -> Any:
    """One run: execute (through the daemon state in timer mode), deliver, export."""
    import time

    from .app import execute
    from .interrupt import settle
    from .reporters.outputs import OutputError, deliver

    run_deadline = time.monotonic() + config.run_timeout_s  # outputs never wait past it
    report = _daemon_run(config, request) if config.daemon else execute(request)
    report = settle(report)  # final from here: a later signal changes neither it nor the exit
    failed: OutputError | None = None
    try:
        deliver(report, specs, config.verbose, run_deadline)
    except OutputError as exc:  # an unwritable output costs neither the others nor the export
        failed = exc
    if otlp_settings.endpoint:
        from .export.otel import export_report
        from .interrupt import time_left

        budget = time_left(15.0)  # interrupted: what is left of the grace (the rest is spooled)
        result = export_report(report, otlp_settings, config.state_dir, timeout_s=budget)
        if result.errors:
            _say(f"sitscheck: {result.summary()}")
    if failed is not None:
        raise failed
    return report


def _daemon_run(config: Any, request: Any) -> Any:
    """A timer-mode run. A state dir that cannot be opened or saved (read-only, full) costs the
    run its deltas, never its report: the report says what happened to the state."""
    from .app import execute
    from .daemon.session import DaemonSession
    from .daemon.state import StateError

    try:
        session = DaemonSession(config.state_dir).open()
    except StateError as exc:
        report = execute(request)
        return _with_note(report, f"daemon state not used: {exc}")
    try:
        report = execute(request, wrap=session.follow)
        try:
            return session.finish(report)
        except StateError as exc:
            return _with_note(report, f"daemon state not saved: {exc}")
    finally:
        session.close()


def _with_note(report: Any, note: str) -> Any:
    """The timer run's state failed: the health result stands, but the run is UNKNOWN at
    best (exit 3), since what it should report as new cannot be known."""
    from msgspec.structs import replace

    from .models import Status, worst

    _say(f"sitscheck: {note}")
    status = worst([report.status, Status.UNKNOWN])
    headline = f"{status.value.upper()} — {report.headline} — {note}"
    return replace(report, headline=headline, status=status)


def _config(overrides: dict[str, Any], config_path: Path | None) -> Any:
    from .site_config import build_config, load_site_config

    site = load_site_config(config_path)
    return build_config(site, overrides, str(config_path or "options"))


@app.command(cls=_Command)
def daemon(
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            metavar="SECONDS",
            help="Seconds between runs (default 300, at least 1).",
            show_default=False,
            callback=at_least_one_second,
        ),
    ] = 300.0,
    output: DaemonOutputOpt = None,
    config: ConfigOpt = None,
    state_dir: StateDirOpt = None,
    sys_root: SysRootOpt = None,
    otlp: OtlpOpt = None,
) -> None:
    """Long-running mode: a daemon run every --interval (systemd Type=notify, watchdog)."""

    def body() -> int:
        from .app import RunRequest
        from .daemon.loop import serve
        from .reporters.outputs import parse_outputs

        settings = _config({"state_dir": state_dir, "sys_root": sys_root, "daemon": True}, config)
        specs = parse_outputs(output or ["prom=/var/lib/node_exporter/textfile_collector"])
        otlp_settings = _otlp_settings(settings, otlp)
        request = RunRequest(settings)

        def run_once() -> Any:
            return _execute_and_deliver(settings, request, specs, otlp_settings)

        budget = settings.run_timeout_s + settings.sample_seconds + 30.0
        return serve(run_once, interval, run_budget_s=budget)

    raise typer.Exit(_guarded(body))


@app.command(cls=_Command)
def checks() -> None:
    """List the checks, one line each."""
    raise typer.Exit(_guarded(_print_checks))


def _print_checks() -> int:
    from .contract.registry import BrokenCheck, discover

    for found in discover():
        if isinstance(found, BrokenCheck):
            print(printable(f"{found.name:<15} BROKEN: {found.error}"))
        else:
            gpu = " [gpu]" if found.needs_gpu else ""
            print(f"{found.name:<15} {found.layer.value:<9} {found.summary}{gpu}")
    return 0


@app.command(cls=_Command)
def collect(
    directory: Annotated[
        Path,
        typer.Argument(
            help="Folder to write the bundle into (new or empty), or a new X.tar.gz / X.tgz "
            "to write it as a gzip tarball."
        ),
    ],
    sample_seconds: SampleOpt = None,
    load: LoadOpt = False,
    bandwidth: BandwidthOpt = False,
    trt_log: TrtOpt = None,
    config: ConfigOpt = None,
    sys_root: SysRootOpt = None,
) -> None:
    """Record this node's raw evidence as a bundle that `run --from` replays."""

    def body() -> int:
        from .app import live_sources, selected_checks
        from .contract.evidence import gather
        from .sources.bundle_writer import open_bundle_writer
        from .sources.collect import collect_bundle

        settings = _config(
            {
                "sample_seconds": sample_seconds,
                "load": load or None,
                "bandwidth": bandwidth or None,
                "trt_logs": trt_log or None,
                "sys_root": sys_root,
            },
            config,
        )
        declared = gather(selected_checks(settings))
        with open_bundle_writer(directory) as out:
            sources = live_sources(settings, declared, load_margin_s=8.0)
            try:
                summary = collect_bundle(sources, out, declared)
            finally:
                sources.close()
        typer.echo(printable(f"wrote {len(summary['written'])} files to {directory}"))
        for name, reason in summary["missing"].items():
            typer.echo(printable(f"  missing {name}: {reason}"))
        return 0

    raise typer.Exit(_guarded(body))


@rules_app.command("validate", cls=_Command)
def rules_validate(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Rule files, profile files (in a profiles/ folder) or folders."),
    ] = None,
) -> None:
    """Validate rule files against the declared facts and profiles against the profile schema;
    each error names file and line."""

    def body() -> int:
        from .engine.validation import validate

        outcome = validate(list(files or []))
        for problem in outcome.problems:
            _say(str(problem))
        if outcome.problems:
            typer.echo(f"sitscheck: {len(outcome.problems)} problem(s)", err=True)
            return EXIT_UNKNOWN
        typer.echo(outcome.summary())
        return 0

    raise typer.Exit(_guarded(body))


@rules_app.command("list", cls=_Command)
def rules_list(
    rules: RulesOpt = None,
    config: ConfigOpt = None,
) -> None:
    """List every rule a run reads (shipped, the site folder's, --rules) with its scope,
    severity, layer, file:line and source, then every hardware profile with its file and
    what it matches."""

    def body() -> int:
        from .engine.loader import load_profiles, load_rules, rule_files

        dirs = _rules_dirs(rules, config)
        ruleset = load_rules(rule_files(dirs))
        for rule in ruleset.rules:
            typer.echo(
                f"{rule.id:<40} {rule.scope:<4} {rule.severity.value:<8} {rule.layer.value:<8} "
                f"{rule.file}:{rule.line}  {rule.source or '-'}"
            )
        profiles = load_profiles(dirs)
        if profiles:
            typer.echo("\nprofiles:")
        for profile in profiles.values():
            match = profile.data.get("match") or {}
            matched = "; ".join(
                f"{key} {', '.join(str(v) for v in match.get(key) or [])}"
                for key in ("names", "pci_device_ids")
                if match.get(key)
            )
            typer.echo(f"{profile.name:<16} {profile.file}  {matched or 'matches nothing'}")
        return 0

    raise typer.Exit(_guarded(body))


@app.command(cls=_Command)
def explain(code: str, rules: RulesOpt = None, config: ConfigOpt = None) -> None:
    """Print what a rule id (a site's too), xid.N / sxid.N or finding code means, its evidence
    and action."""

    def body() -> int:
        from .contract.registry import discover
        from .engine.loader import load_rules, rule_files
        from .report.explain import explain_text

        ruleset = load_rules(rule_files(_rules_dirs(rules, config)))
        typer.echo(explain_text(code, ruleset, discover()), nl=False)
        return 0

    raise typer.Exit(_guarded(body))


def _rules_dirs(rules: list[Path] | None, config_path: Path | None) -> list[Path]:
    """The rule folders and files a run with these options reads (`app.rules_dirs`)."""
    from .app import rules_dirs

    return rules_dirs(_config({"rules_dirs": rules or None}, config_path))


@app.command(cls=_Command)
def schema(
    facts: Annotated[
        str | None,
        typer.Option(
            "--facts",
            metavar="CHECK",
            help="Print the schema of this check's facts.",
            autocompletion=complete_checks,
        ),
    ] = None,
    profile: Annotated[
        bool, typer.Option("--profile", help="Print the schema of hardware profile files.")
    ] = False,
) -> None:
    """Print the JSON Schema of the JSON report (or of one check's facts, or of profiles)."""
    if facts is not None:
        raise typer.Exit(_guarded(lambda: _facts_schema(facts)))
    if profile:
        raise typer.Exit(_guarded(_profile_schema))
    from .reporters.json_report import report_schema

    typer.echo(report_schema(), nl=False)


def _facts_schema(name: str) -> int:
    from .contract.registry import discover, select
    from .engine.fact_schema import facts_schema, schema_text

    check = select(discover(), [name], [])[0]
    if not hasattr(check, "layer"):
        _say(f"sitscheck: check {name} failed to load: {check.error}")
        return EXIT_UNKNOWN
    if getattr(check, "facts", None) is None:
        _say(f"sitscheck: check {name} declares no facts model")
        return EXIT_UNKNOWN
    typer.echo(schema_text(facts_schema(check)), nl=False)
    return 0


def _profile_schema() -> int:
    from .contract.registry import discover
    from .engine.fact_schema import schema_text
    from .engine.profile_schema import ProfileSchema

    typer.echo(schema_text(ProfileSchema.of_checks(discover()).json_schema()), nl=False)
    return 0


def _guarded(body: Any) -> int:
    try:
        result: int = body()
        return result
    except SitscheckError as exc:
        _say(f"sitscheck: {exc}")
        return EXIT_UNKNOWN
    except KeyboardInterrupt:
        _say("sitscheck: interrupted")
        return EXIT_UNKNOWN
    except Exception as exc:  # never a traceback and exit 1 (which monitoring reads as WARNING)
        _say(f"sitscheck: internal error: {type(exc).__name__}: {exc}")
        return EXIT_UNKNOWN


def _say(line: str) -> None:
    """One line on stderr, made printable: errors quote file contents, bundle paths and
    collectors' answers, which are nobody's to print raw on an operator's terminal."""
    typer.echo(printable(line), err=True)


def main() -> None:
    if sys.argv[1:] == ["checks"]:
        # The inventory call fleets make on every node, answered before the command line is
        # built: typer coerces even the absent `--help` flag through pydantic, which would be
        # half of this command's start-up. Same output and exit code as `sitscheck checks`.
        raise SystemExit(_guarded(_print_checks))
    try:
        code = app(prog_name="sitscheck", standalone_mode=False)
    except Exception as exc:
        raise SystemExit(_usage_error(exc)) from None
    raise SystemExit(code if isinstance(code, int) else 0)


def _usage_error(exc: Exception) -> int:
    """A mistake on the command line (an unknown option, a value of the wrong type, a missing
    argument): one line, exit 3. Nagios, Slurm and NPD read exit 2 as CRITICAL, and a typo in
    a timer's arguments must never drain every node. Click's own errors carry `show` and
    `format_message` (their public interface); anything else is sitscheck's internal error."""
    message = getattr(exc, "format_message", None)
    if not callable(message):
        _say(f"sitscheck: internal error: {type(exc).__name__}: {exc}")
        return EXIT_UNKNOWN
    context = getattr(exc, "ctx", None)
    where = getattr(context, "command_path", "sitscheck")
    text = " ".join(str(message()).split()) or type(exc).__name__
    _say(f"{where}: {text} (see {where} --help)")
    return EXIT_UNKNOWN


if __name__ == "__main__":
    sys.exit(main())  # type: ignore[func-returns-value]


@app.command(cls=_Command)
def accept(
    budget: Annotated[
        float, typer.Option("--budget", metavar="SECONDS", help="Whole run, plan and report.")
    ] = 300.0,
    gpus: Annotated[
        str | None, typer.Option("--gpus", metavar="0,1,…", help="GPUs to load (default all).")
    ] = None,
    skip: Annotated[
        list[str] | None,
        typer.Option("--skip", metavar="PHASE", help="Leave a phase out (repeatable)."),
    ] = None,
    engine: Annotated[
        str, typer.Option("--engine", metavar="auto|torch|ptx", help="GEMM engine.")
    ] = "auto",
    force: Annotated[
        bool, typer.Option("--force", help="Run even with another process on a GPU, or MIG.")
    ] = False,
    collect: Annotated[
        Path | None,
        typer.Option("--collect", metavar="DIR", help="Record the run as a bundle (or .tar.gz)."),
    ] = None,
    inject: Annotated[
        list[str] | None,
        typer.Option("--inject", metavar="FAULT:GPU", hidden=True, help="Test-only faults."),
    ] = None,
    output: OutputOpt = None,
    verbose: VerboseOpt = False,
    expect_gpus: ExpectOpt = None,
    profile: ProfileOpt = None,
    rules: RulesOpt = None,
    config: ConfigOpt = None,
    otlp: OtlpOpt = None,
) -> None:
    """Acceptance run of a freshly racked node: memory test, compute and silent-data-corruption
    screen, soak, bandwidth (about five minutes; run only when asked)."""
    overrides: dict[str, Any] = {
        "expect_gpus": expect_gpus,
        "profile": profile,
        "rules_dirs": rules or None,
        "verbose": verbose or None,
        "run_timeout_s": budget,
    }
    options = {"budget": budget, "gpus": gpus, "skip": skip or [], "engine": engine,
               "force": force, "collect": collect, "inject": inject or []}  # fmt: skip
    raise typer.Exit(_guarded(lambda: _accept(overrides, config, options, output or [], otlp)))


def _accept(
    overrides: dict[str, Any],
    config_path: Path | None,
    options: dict[str, Any],
    outputs: list[str],
    otlp: str | None,
) -> int:
    import time

    from msgspec.structs import replace

    from .accept.command import prepare
    from .app import RunRequest, selected_checks
    from .contract.evidence import gather
    from .interrupt import interruptible
    from .reporters.outputs import parse_outputs
    from .sources.bundle_writer import check_target

    config = _config(overrides, config_path)
    specs = parse_outputs(outputs)
    if options["collect"] is not None:  # a path collect would refuse: now, not after the run
        check_target(options["collect"], "accept --collect")
    otlp_settings = _otlp_settings(config, otlp)  # as run: a malformed setting is a warning
    json_on_stdout = any(s.name == "json" and not s.path for s in specs)
    progress = sys.stderr.isatty() and not json_on_stdout
    with interruptible() as interrupt:
        acceptance = prepare(
            config, gather(selected_checks(config)), options["budget"], options["gpus"],
            options["skip"], options["engine"], options["force"], options["inject"], progress,
            lambda: interrupt.triggered,
        )  # fmt: skip
        acceptance.collect_to = options["collect"]
        # the run's deadline counts from the plan's start: the budget holds whatever happens
        left = max(options["budget"] - (time.monotonic() - acceptance.began), 1.0)
        config = replace(config, run_timeout_s=left)
        acceptance.config = config
        try:
            report = _execute_and_deliver(
                config, RunRequest(config, acceptance=acceptance), specs, otlp_settings
            )
        finally:
            acceptance.close()
    return _exit_code(report, specs, interrupt)
