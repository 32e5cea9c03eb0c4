"""Pass rates with their 95 % intervals, as PNGs a person opens from the Dagster UI; the trend also as a
small inline SVG the asset page shows without a click.

Each bar or point is one (dataset, kind of run, config). Error bars are the distance from the rate to each
interval bound, never negative (`error_bars`), so every n and every count draws; a 0 % bar shows as an
outline on the axis and a 100 % bar's label stays inside the plot.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from urllib.parse import quote

import polars as pl

from mimo_assets.analysis.stats import KEYS
from mimo_core.records.rates import LABELS
from mimo_core.records.rates import PASS_RATE_OF_GRADED as RATE

MAX_WIDTH_IN = 16.0  # many bars share the width (and their labels shrink) instead of a poster-sized PNG


def label(row: dict) -> str:
    """A bar's name: its config, then dataset and kind of run."""
    return f"{row['config_name']}\n{row['dataset']} · {row['run_kind']}"


def error_bars(rates: list[float], lows: list[float], highs: list[float]) -> list[list[float]]:
    """[below, above] for matplotlib's yerr: the interval's distance from the rate, clamped at 0 (a bound
    can round to the wrong side of a 0 % or 100 % rate)."""
    return [
        [max(0.0, r - lo) for r, lo in zip(rates, lows, strict=True)],
        [max(0.0, hi - r) for r, hi in zip(rates, highs, strict=True)],
    ]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    plt = _pyplot()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def pass_rate_png(rates: pl.DataFrame) -> bytes:
    """One bar per (dataset, kind, config) with its Wilson interval and its rate and n written on it."""
    plt = _pyplot()
    rows = list(rates.sort(*KEYS).iter_rows(named=True))
    n_bars = len(rows)
    rate = [float(r[RATE]) for r in rows]
    err = error_bars(rate, [float(r["ci_low"]) for r in rows], [float(r["ci_high"]) for r in rows])
    fig, ax = plt.subplots(figsize=(min(MAX_WIDTH_IN, max(4.0, 1.4 * n_bars + 2)), 4.0), dpi=100)
    xs = list(range(n_bars))
    ax.bar(
        xs,
        rate,
        yerr=err,
        capsize=min(6, 300 / max(n_bars, 1)),
        color="#4c78a8",
        edgecolor="#2f4b7c",
        linewidth=1.0,
        error_kw={"elinewidth": 1.0},
    )
    ax.set_ylim(0, 1.12)  # room above 100 % for the bar's label and its interval
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])
    ax.axhline(0, color="#2f4b7c", linewidth=1.0)  # a 0 % bar still has a visible base
    ax.set_ylabel(f"{LABELS[RATE]} (95% Wilson CI)")
    ax.set_title(f"{LABELS[RATE].capitalize()} by dataset, kind of run and config")
    if n_bars <= 40:
        ax.set_xticks(xs, [label(r) for r in rows], fontsize=max(5, 9 - n_bars // 8))
        for x, r, row in zip(xs, rate, rows, strict=True):
            ax.text(
                x, min(r + 0.03, 1.04) if r < 0.9 else 1.05, f"{r:.0%} (n={row['graded']})", ha="center", fontsize=8
            )
    else:  # too many to name: the table beside the plot names them
        ax.set_xticks([])
        ax.set_xlabel(f"{n_bars} (dataset, kind, config) cells, in the table's order")
    return _png(fig)


def trend_png(trend: pl.DataFrame) -> bytes:
    """Pass rate over nights, one line per (dataset, kind, config), with 95 % Wilson intervals."""
    plt = _pyplot()
    nights = sorted(trend["night"].unique().to_list())
    groups = sorted(trend.group_by(*KEYS), key=lambda g: tuple(map(str, g[0])))
    legend_in = 2.5 if len(groups) <= 12 else 0.0
    fig, ax = plt.subplots(figsize=(min(MAX_WIDTH_IN, max(4.5, 0.9 * len(nights) + 3) + legend_in), 3.8), dpi=100)
    position = {n: i for i, n in enumerate(nights)}
    for key, group in groups:
        group = group.sort("night")
        xs = [position[n] for n in group["night"].to_list()]
        rate = [float(v) for v in group[RATE].to_list()]
        err = error_bars(rate, [float(v) for v in group["ci_low"]], [float(v) for v in group["ci_high"]])
        name = dict(zip(KEYS, key, strict=True))
        ax.errorbar(
            xs,
            rate,
            yerr=err,
            marker="o",
            capsize=4,
            clip_on=False,
            label=f"{name['config_name']} ({name['dataset']} · {name['run_kind']})",
        )
    ticks = range(0, len(nights), max(1, len(nights) // 20))
    ax.set_xticks(list(ticks), [nights[i] for i in ticks], rotation=30, ha="right", fontsize=8)
    ax.set_ylim(-0.04, 1.04)  # a 0 % or 100 % point sits inside the frame, not on it
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])
    ax.set_ylabel(f"{LABELS[RATE]} (95% Wilson CI)")
    ax.set_title(f"{LABELS[RATE].capitalize()} per night")
    if len(groups) <= 12:  # beside the plot, never over a line
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return _png(fig)


def write_png(data: bytes, path: Path) -> str:
    """Save the file and return markdown embedding it, which the UI's metadata panel renders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return f"![{path.stem}](data:image/png;base64,{base64.b64encode(data).decode()})"


# The UI renders markdown metadata inline only under 1,000 characters (longer: a "[Show Markdown]" button).
INLINE_MARKDOWN = 1000
_COLORS = ("royalblue", "darkorange", "seagreen", "crimson", "purple", "saddlebrown", "deeppink", "gray")


def trend_inline_md(trend: pl.DataFrame, budget: int = INLINE_MARKDOWN - 10) -> str:
    """Pass rate per (dataset, kind, config) over the latest nights as an SVG data URI plus a legend, under
    `budget` characters: as many of the latest nights (and lines) as fit; the PNG has them all."""
    nights = sorted(trend["night"].unique().to_list())
    named = trend.with_columns(line=pl.col("config_name") + " (" + pl.col("dataset") + " · " + pl.col("run_kind") + ")")
    lines = sorted(named["line"].unique().to_list())
    rate = {(r["line"], r["night"]): float(r[RATE]) for r in named.iter_rows(named=True)}
    for n_lines in range(min(len(lines), len(_COLORS)), 0, -1):
        for n_nights in range(len(nights), 0, -1):
            md = _svg_md(nights[-n_nights:], lines[:n_lines], rate)
            if len(md) <= budget:
                return md
    return ""


def _svg_md(nights: list[str], lines: list[str], rate: dict[tuple[str, str], float]) -> str:
    step = 100 / max(1, len(nights) - 1)
    shapes = ["<rect width='100' height='40' fill='white' stroke='lightgray'/>"]
    legend = []
    for line, color in zip(lines, _COLORS, strict=False):
        pts = [
            f"{round(i * step)},{round(38 - 36 * rate[(line, n)])}" for i, n in enumerate(nights) if (line, n) in rate
        ]
        if not pts:
            continue
        shapes.append(
            f"<polyline points='{' '.join(pts)}' fill='none' stroke='{color}' stroke-width='1.5'/>"
            if len(pts) > 1
            else f"<circle cx='{pts[0].split(',')[0]}' cy='{pts[0].split(',')[1]}' r='2' fill='{color}'/>"
        )
        latest = next((rate[(line, n)] for n in reversed(nights) if (line, n) in rate), None)
        legend.append(f"{color}: {line} {latest:.0%}" if latest is not None else f"{color}: {line}")
    svg = (
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='-2 -2 104 44' width='360' height='150'>"
        + "".join(shapes)
        + "</svg>"
    )
    uri = "data:image/svg+xml," + quote(svg, safe="/:=',.-")
    return f"![pass rate per night]({uri})\n\n{nights[0]} … {nights[-1]} (0–100 %): " + " · ".join(legend)
