"""One run, start to end: sources → checks → rules → report. No I/O to the terminal here."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from msgspec import Struct

from . import interrupt
from .config import SITE_DIR, RunConfig
from .contract import Check
from .contract.evidence import DeclaredEvidence, gather
from .contract.registry import BrokenCheck, discover, select
from .contract.settings import check_settings
from .errors import ConfigError
from .sources.base import Sources
from .sources.scope import Scope, entered
from .threads import CannotStart, start_daemon

# The rules engine, the report and the bundle reader are imported where they are used: a
# live run reaches its sampling window without them (they load inside it). The live sources
# (commands, NVML, the kernel log's readers, the bandwidth probe) are imported by a live run
# only: a replay never loads them.
if TYPE_CHECKING:
    from .engine.cel import CelEnvironment
    from .engine.model import Profile, RuleSet
    from .models import CheckResult, Report, Verdict
    from .sources.live import LiveOptions, LiveSources


class RunRequest(Struct, frozen=True):
    """What to run: the run's settings, and the bundle to replay (None: the live node);
    `acceptance`: `sitscheck accept`'s phases around the checks (an `accept.session.Acceptance`)."""

    config: RunConfig
    bundle: str | None = None
    acceptance: Any = None


def rules_dirs(config: RunConfig) -> list[Path]:
    """The rule folders and files beside the shipped ones, for every command that reads rules
    (`run`, `daemon`, `rules list`, `explain`): site rule files live in
    /etc/sitscheck/rules.d (profiles in rules.d/profiles), apart from config.yaml; then each
    of the config's `rules_dirs` (`--rules` in its place)."""
    site = SITE_DIR / "rules.d"
    for location in config.rules_dirs:
        if not location.exists():
            raise ConfigError(f"--rules {location}: no such file or folder")
    return ([site] if site.is_dir() else []) + list(config.rules_dirs)


SourcesWrapper = Callable[[Sources], Sources]
T = TypeVar("T")


@contextmanager
def open_sources(
    request: RunRequest,
    declared: DeclaredEvidence,
    wrap: SourcesWrapper | None = None,
    deadline: float | None = None,
) -> Iterator[Sources]:
    """The sources of a run, serving what the selected checks declared; `wrap` decorates
    them (the daemon reads the log from its cursor). `deadline`: the run's, which bounds
    unpacking a bundle too."""
    with _raw_sources(request, declared, deadline) as sources:
        yield wrap(sources) if wrap is not None else sources


@contextmanager
def _raw_sources(
    request: RunRequest, declared: DeclaredEvidence, deadline: float | None
) -> Iterator[Sources]:
    config = request.config
    if request.bundle is not None:
        from .sources.replay import replay_sources

        with replay_sources(request.bundle, deadline) as replay:
            yield replay
        return
    live = live_sources(config, declared)
    try:
        yield live
    finally:
        live.close()


def live_sources(
    config: RunConfig, declared: DeclaredEvidence, load_margin_s: float = 2.0
) -> LiveSources:
    """The live node, serving the commands, NVML calls and log files the checks declared."""
    from .sources.live import LiveSources

    return LiveSources(
        live_options(config, declared, load_margin_s),
        commands=declared.commands,
        nvml_reads=declared.nvml_reads,
        workloads=declared.workloads,
        installed=installed_evidence,
    )


def installed_evidence() -> DeclaredEvidence:
    """What every installed check declares (the live sources read it where the run's
    selection declares no workload of a kind asked for: `--load`, `--bandwidth`)."""
    return gather(discover())


def live_options(
    config: RunConfig, declared: DeclaredEvidence, load_margin_s: float = 2.0
) -> LiveOptions:
    """`load_margin_s`: how long the --load probe outlasts the sampling window."""
    from .sources.live import LiveOptions
    from .workloads.bandwidth import budget_s

    return LiveOptions(
        command_timeout_s=config.command_timeout_s,
        nvml_deadline_s=config.nvml_deadline_s,
        sample_seconds=config.sample_seconds,
        sys_root=config.sys_root,
        log_paths={
            folder: expand_paths(_option_patterns(config, spec.option))
            for folder, spec in declared.logs.items()
        },
        load_seconds=config.sample_seconds + load_margin_s if config.load else None,
        bandwidth_s=budget_s(config.check_timeout_s) if config.bandwidth or config.load else None,
    )


def _option_patterns(config: RunConfig, option: str) -> list[str]:
    value = getattr(config, option, None)
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def expand_paths(patterns: list[str]) -> list[Path]:
    import glob

    found: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern, recursive=True)) or [pattern]
        found.extend(Path(m) for m in matches if Path(m).is_file())
    return found


def selected_checks(config: RunConfig) -> list[Check | BrokenCheck]:
    return select(discover(), config.checks, config.skip)


def execute(request: RunRequest, wrap: SourcesWrapper | None = None) -> Report:
    config = request.config
    started_at = datetime.now(timezone.utc)
    started = time.monotonic()
    dirs = rules_dirs(config)
    deadline = started + config.run_timeout_s  # rules past it are UNKNOWN, the report written

    def compile_rules(env: CelEnvironment) -> tuple[RuleSet, dict[str, Profile]]:
        from .engine.loader import load_profiles, rule_files, shipped_rules_dirs

        shipped = shipped_rules_dirs()  # the plugins' rule packages, looked up once
        rules = load_rules(rule_files(dirs, shipped), env, deadline, shipped)
        return rules, load_profiles(dirs, shipped)

    # A live run compiles the rules while the checks run (it mostly waits on the sampling
    # window). A replay has no window to hide them behind: on its threads the two only
    # contend for the interpreter, and their memory peaks (the CEL parser and compiled rules;
    # the checks' buffers, such as the kernel-log chunks) would add up, so it compiles after.
    # A broken rule file still fails the run, naming its file and line.
    checks = selected_checks(config)
    settings = check_settings(checks, config.check_config)
    declared = gather(checks)
    with open_sources(request, declared, wrap, deadline) as sources:
        if request.bundle is None and declared.nvml and not config.load:
            # its NVML calls end within the GPU checks' deadline, which is theirs
            open_window(sources, min(time.monotonic() + config.check_timeout_s, deadline))
        # The CEL engine (a native library where its wheel installs) is loaded before the
        # checks' threads start: under an address-space limit (`ulimit -v`) a thread may then
        # be refused, its check UNKNOWN saying so, but the rules still run and the report is
        # written (tests/faults/test_fault_address_space.py).
        from .engine.cel import CelEnvironment

        env = CelEnvironment()
        background = Background(lambda: compile_rules(env)) if request.bundle is None else None
        # what runs the checks and makes the report is loaded once the window is open (a live
        # run's sampling starts without waiting for it)
        from .contract.runner import run_checks
        from .engine.profiles import select_profile
        from .report.assemble import build_report

        guarded = interrupt.guard(checks)
        if request.acceptance is not None:
            results = request.acceptance.run(guarded, sources, settings, deadline)
        else:
            results = run_checks(guarded, sources, config, settings, deadline=deadline)
        driver = sources.driver()
        meta = sources.meta()
    ruleset, profiles = background.result() if background else compile_rules(env)
    profile = select_profile(profiles, config.profile, results)
    node = {"gpu_count": _gpu_count(results), "expect_gpus": config.expect_gpus}
    verdicts = evaluate_rules(ruleset, results, profile, env, node, deadline)
    skipped_for_driver = any(r.skip_reason == driver.detail for r in results)
    note = interrupt.note(f"GPU checks skipped: {driver.detail}" if skipped_for_driver else None)
    from .contract.phase_record import accepted_without

    left_out = accepted_without([r.skip_reason for r in results], [r.name for r in results])
    note = "; ".join(n for n in (note, left_out) if n) or None
    report = build_report(
        results,
        verdicts,
        started_at,
        time.monotonic() - started,
        sources_mode(request),
        request.bundle,
        profile.name if profile else None,
        _bundle_host(meta) if request.bundle else None,
        note,
        reads={rule.id: rule.requires for rule in ruleset.rules},
    )
    recorded = meta.get("collected_at") if request.bundle else None
    report.bundle_recorded_at = recorded if isinstance(recorded, str) else None
    return report


def load_rules(
    files: list[Path],
    env: CelEnvironment,
    deadline: float | None,
    shipped: list[Path],
) -> RuleSet:
    """`engine.loader.load_rules` (imported when a run compiles its rules); `shipped`: the
    shipped rule folders (`loader.shipped_rules_dirs`)."""
    from .engine.loader import load_rules as load

    return load(files, env, deadline, shipped=shipped)


def evaluate_rules(
    ruleset: RuleSet,
    results: list[CheckResult],
    profile: Profile | None,
    env: CelEnvironment,
    node: dict[str, Any],
    deadline: float | None,
) -> list[Verdict]:
    """`engine.evaluate.evaluate_rules` (imported when a run evaluates its rules)."""
    from .engine.evaluate import evaluate_rules as evaluate

    return evaluate(ruleset, results, profile, env, node, deadline)


WINDOW_WAIT_S = 1.0  # at most this long for the window to start before the checks do


def open_window(sources: Sources, deadline: float | None = None) -> None:
    """A live run's GPU sampling window (the NVML snapshot, which the GPU checks wait for)
    starts first, on its own thread: the checks' imports, their commands and the rules'
    compiling then happen inside the window rather than before it, and do not contend with
    the window's start for the interpreter. Waits until the window has begun (or the
    snapshot was taken without one), at most WINDOW_WAIT_S: NVML that hangs costs the checks
    that much, and each of them still waits on the snapshot under its own deadline.
    `deadline`: that of the checks that wait on it, which owns its NVML calls (`nvml.Nvml`:
    a hung call is cut there and named, rather than outliving them)."""

    def take() -> None:
        try:
            if deadline is None:
                sources.gpu_snapshot()
                return
            with entered(Scope(deadline)):
                sources.gpu_snapshot()
        except Exception:  # the checks that read it meet the same error, as theirs
            pass

    try:
        start_daemon(take, name="gpu-snapshot")
    except CannotStart:  # the first GPU check to need the snapshot takes it, on its thread
        return
    started = getattr(sources, "window_started", None)
    if isinstance(started, threading.Event):
        started.wait(WINDOW_WAIT_S)


class Background(Generic[T]):
    """Run one function on a daemon thread; `result()` joins it and re-raises its error. A
    thread the system refuses (`ulimit -v`): `result()` runs the function itself."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        try:
            self._thread = start_daemon(self._run, name="rules-loader")
        except CannotStart:
            pass

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc

    def result(self) -> T:
        if self._thread is None:
            self._run()
        else:
            self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


def sources_mode(request: RunRequest) -> str:
    return "replay" if request.bundle is not None else "live"


def _gpu_count(results: list[CheckResult]) -> int | None:
    for result in results:
        if result.name == "driver":
            count = result.facts.get("gpu_count")
            return count if isinstance(count, int) else None
    return None


def _bundle_host(meta: dict[str, object]) -> str:
    from .models import NO_HOST

    host = meta.get("host")
    return host if isinstance(host, str) and host else NO_HOST
