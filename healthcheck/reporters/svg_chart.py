"""One device's time series as one inline SVG: a panel per unit, stacked on a shared time axis.

A panel holds the lines of one unit (SM clock in MHz; power in W; GPU and HBM temperature in
°C; iteration time in ms) and the levels of that unit (the power limit, 83 °C) as dashed lines,
labelled in the panel's title row, where no data runs over the label. A moment (the steady
state's start) is a dashed line across every panel, the time before it shaded. Each panel's
value range takes in its levels, so a limit is always in sight, and spans at least MIN_SPAN of
its largest value, so noise of a percent is drawn as the flat line it is. Every text from the
report is made printable and escaped; a value missing or not finite breaks its line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..models import Level, Series, SeriesLine
from .html_text import html_text as escape

WIDTH = 960
LEFT, RIGHT = 78, 24
TOP = 22  # room for a moment's label above the first panel
HEAD = 26  # a panel's title row
PLOT = 118  # a panel's plotting height
GAP = 18
AXIS = 44  # the time axis under the last panel
MIN_SPAN = 0.2
PLOTTABLE = 1e12  # beyond any clock, power, temperature or time a chart shows: drawn as missing
COLOURS = ("#0969da", "#bc4c00", "#cf222e", "#8250df", "#1a7f37", "#6e7781")
UNITS = {"Cel": "°C"}  # the metrics' units (UCUM) as a reader writes them
CHAR_W = 7.4  # a bold 12 px sans-serif character (wide)
LEVEL_CHAR_W = 6.2  # an 11 px one, to lay out a legend without measuring text

CHART_CSS = """
svg.trace { width: 100%; height: auto; display: block; font: 12px system-ui, sans-serif; }
svg.trace .frame { fill: none; stroke: #d0d7de; }
svg.trace .grid { stroke: #eaeef2; }
svg.trace .tick { fill: #57606a; }
svg.trace .axis { fill: #57606a; font-size: 11px; }
svg.trace .title { fill: #1f2328; font-weight: 600; }
svg.trace .line { fill: none; stroke-width: 1.6; stroke-linejoin: round; }
svg.trace .level { stroke: #57606a; stroke-dasharray: 6 4; stroke-width: 1.2; }
svg.trace .level-label { fill: #57606a; font-size: 11px; }
svg.trace .moment { stroke: #1f2328; stroke-dasharray: 3 3; stroke-width: 1; }
svg.trace .moment-label { fill: #1f2328; font-size: 11px; }
svg.trace .warmup { fill: #eef1f4; }
"""


def display_unit(unit: str) -> str:
    return UNITS.get(unit, unit)


def series_svg(series: Series, title: str) -> str:
    """The SVG of one device's series (`title`: plain text, escaped here)."""
    panels = _panels(series.lines)
    if not panels:
        return ""
    t_max = max((t for line in series.lines for t in line.t if _finite(t)), default=0.0)
    x = _Scale(0.0, max(t_max, 1.0), LEFT, WIDTH - RIGHT)
    height = TOP + len(panels) * (HEAD + PLOT) + (len(panels) - 1) * GAP + AXIS
    x_ticks = nice_ticks(0.0, x.high, 8)
    parts = [
        f'<svg class="trace" viewBox="0 0 {WIDTH} {height}" role="img">'
        f"<title>{escape(title)}</title>"
    ]
    moments = [m for m in series.moments if _finite(m.t) and 0.0 <= m.t <= x.high]
    shade = min((m.t for m in moments), default=None)
    top = TOP
    colour = 0
    for unit, lines in panels:
        levels = [lv for lv in series.levels if lv.unit == unit and _finite(lv.value)]
        parts.append(_panel(unit, lines, levels, x, x_ticks, top, colour, shade))
        parts.extend(
            _line("moment", x(m.t), x(m.t), top + HEAD, top + HEAD + PLOT) for m in moments
        )
        colour += len(lines)
        top += HEAD + PLOT + GAP
    parts.append(_time_axis(x, x_ticks, top - GAP))
    parts.extend(_moment_label(moment.t, moment.label, x) for moment in moments)
    parts.append("</svg>")
    return "".join(parts)


def _panels(lines: Sequence[SeriesLine]) -> list[tuple[str, list[SeriesLine]]]:
    """The lines grouped by unit, in the order the units first appear."""
    groups: dict[str, list[SeriesLine]] = {}
    for line in lines:
        if any(_finite(v) for v in line.values):
            groups.setdefault(line.unit, []).append(line)
    return list(groups.items())


class _Scale:
    """A linear map from values in [low, high] to pixels in [start, end]."""

    def __init__(self, low: float, high: float, start: float, end: float) -> None:
        self.low, self.high, self.start, self.end = low, high, start, end

    def __call__(self, value: float) -> float:
        span = self.high - self.low
        return self.start + (value - self.low) / span * (self.end - self.start)


def _panel(
    unit: str,
    lines: list[SeriesLine],
    levels: list[Level],
    x: _Scale,
    x_ticks: list[float],
    top: int,
    colour: int,
    shade: float | None,
) -> str:
    """One unit's panel; the time before `shade` (the first moment) shaded."""
    plot_top = top + HEAD
    values = [v for line in lines for v in line.values if v is not None and _finite(v)]
    low, high = value_range([*values, *(lv.value for lv in levels)])
    ticks = nice_ticks(low, high, 4)
    y = _Scale(min(low, ticks[0]), max(high, ticks[-1]), plot_top + PLOT, plot_top)
    out = [f'<g class="panel" data-unit="{escape(unit)}">']
    if shade is not None:
        out.append(
            f'<rect class="warmup" x="{LEFT}" y="{plot_top}" width="{x(shade) - LEFT:.1f}" '
            f'height="{PLOT}"/>'
        )
    out.append(_grid(unit, ticks, y, x_ticks, x, plot_top))
    out.extend(_line("level", LEFT, WIDTH - RIGHT, y(lv.value), y(lv.value)) for lv in levels)
    for n, line in enumerate(lines):
        stroke = COLOURS[(colour + n) % len(COLOURS)]
        out.append(
            f'<path class="line" data-name="{escape(line.name)}" stroke="{stroke}" '
            f'd="{_path(line, x, y)}"/>'
        )
    out.append(_legend(unit, lines, levels, top, colour))
    out.append("</g>")
    return "".join(out)


def _grid(
    unit: str, ticks: list[float], y: _Scale, x_ticks: list[float], x: _Scale, plot_top: int
) -> str:
    """A panel's grid, its value ticks, its unit along the value axis, and its frame."""
    out = []
    for tick in ticks:
        out.append(_line("grid", LEFT, WIDTH - RIGHT, y(tick), y(tick)))
        out.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">'
            f"{_label(tick, ticks)}</text>"
        )
    out.extend(_line("grid", x(t), x(t), plot_top, plot_top + PLOT) for t in x_ticks)
    middle = plot_top + PLOT / 2
    out.append(
        f'<text class="axis" x="14" y="{middle:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {middle:.1f})">{escape(display_unit(unit))}</text>'
    )
    out.append(
        f'<rect class="frame" x="{LEFT}" y="{plot_top}" width="{WIDTH - LEFT - RIGHT}" '
        f'height="{PLOT}"/>'
    )
    return "".join(out)


def _line(cls: str, x1: float, x2: float, y1: float, y2: float) -> str:
    return f'<line class="{cls}" x1="{x1:.1f}" x2="{x2:.1f}" y1="{y1:.1f}" y2="{y2:.1f}"/>'


def _legend(unit: str, lines: list[SeriesLine], levels: list[Level], top: int, colour: int) -> str:
    """The panel's title row: each line's colour and label, the unit after the last; at its
    right end the levels' dashes and labels (there, no line of the plot runs over them)."""
    out = []
    end = float(WIDTH - RIGHT)
    for level in reversed(levels):
        out.append(
            f'<text class="level-label" x="{end:.1f}" y="{top + HEAD - 9}" text-anchor="end">'
            f"{escape(level.label)}</text>"
        )
        end -= LEVEL_CHAR_W * len(level.label) + 6
        out.append(_line("level", end - 22, end, top + HEAD - 13, top + HEAD - 13))
        end -= 22 + 18
    at = float(LEFT)
    base = top + HEAD - 9
    for n, line in enumerate(lines):
        stroke = COLOURS[(colour + n) % len(COLOURS)]
        unit_text = (
            f'<tspan class="axis"> ({escape(display_unit(unit))})</tspan>'
            if n == len(lines) - 1
            else ""
        )
        out.append(
            f'<line x1="{at:.1f}" x2="{at + 16:.1f}" y1="{base - 4}" y2="{base - 4}" '
            f'stroke="{stroke}" stroke-width="3"/><text class="title" x="{at + 22:.1f}" '
            f'y="{base}">{escape(line.label)}{unit_text}</text>'
        )
        at += 22 + CHAR_W * len(line.label) + 24
    return "".join(out)


def _time_axis(x: _Scale, ticks: list[float], bottom: int) -> str:
    out = []
    for tick in ticks:
        px = x(tick)
        out.append(
            f'<text class="tick" x="{px:.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{_label(tick, ticks)}</text>"
        )
    centre = (LEFT + WIDTH - RIGHT) / 2
    out.append(
        f'<text class="axis" x="{centre:.1f}" y="{bottom + 36}" text-anchor="middle">'
        "time since the load started (s)</text>"
    )
    return "".join(out)


def _moment_label(t: float, label: str, x: _Scale) -> str:
    return _line("moment", x(t), x(t), TOP - 10, TOP - 2) + (
        f'<text class="moment-label" x="{x(t) + 4:.1f}" y="{TOP - 4}">'
        f"{escape(label)} from {t:g} s</text>"
    )


def _path(line: SeriesLine, x: _Scale, y: _Scale) -> str:
    """The line as a path, broken where a value is missing."""
    commands = []
    pen_up = True
    for t, value in zip(line.t, line.values, strict=True):
        if not (_finite(value) and _finite(t)):
            pen_up = True
            continue
        assert value is not None
        commands.append(f"{'M' if pen_up else 'L'}{x(t):.1f} {y(value):.1f}")
        pen_up = False
    return " ".join(commands)


def value_range(values: Sequence[float]) -> tuple[float, float]:
    """The values' range, widened to at least MIN_SPAN of the largest magnitude (and to 1 when
    every value is 0), centred on the values."""
    low, high = min(values), max(values)
    span = max(MIN_SPAN * max(abs(low), abs(high)), 1e-9 if high > low else 1.0)
    if high - low < span:
        middle = (low + high) / 2
        low, high = middle - span / 2, middle + span / 2
    return low, high


def nice_ticks(low: float, high: float, count: int) -> list[float]:
    """About `count` round tick values (steps of 1, 2, 2.5 or 5 × 10^k) covering [low, high]."""
    raw = (high - low) / max(count, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * magnitude >= raw)
    first = math.floor(low / step + 1e-9) * step
    ticks = []
    value = first
    while value < high + step * 0.999:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _label(value: float, ticks: Sequence[float]) -> str:
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    digits = max(0, -math.floor(math.log10(step) + 1e-9)) if step < 1 else 0
    if step < 1 and not math.isclose(step * 10**digits, round(step * 10**digits)):
        digits += 1
    return f"{value:,.{digits}f}"


def _finite(value: float | None) -> bool:
    """A value that can be drawn: a number, and no bigger than PLOTTABLE (a bundle is untrusted:
    1e308 would overflow the scale's arithmetic)."""
    return value is not None and math.isfinite(value) and abs(value) <= PLOTTABLE
