"""Pass rate by config with its 95% interval, as a PNG a person opens from the Dagster UI; the trend
also as a small inline SVG the asset page shows without a click."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from urllib.parse import quote

import polars as pl


def pass_rate_png(rates: pl.DataFrame) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = rates["config_name"].to_list()
    rate = rates["pass_rate"].to_list()
    low = [r - lo for r, lo in zip(rate, rates["ci_low"].to_list(), strict=False)]
    high = [hi - r for r, hi in zip(rate, rates["ci_high"].to_list(), strict=False)]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(names) + 2), 3.5), dpi=100)
    ax.bar(names, rate, yerr=[low, high], capsize=6, color="#4c78a8")
    ax.set_ylim(0, 1)
    ax.set_ylabel("pass rate (95% Wilson CI)")
    ax.set_title("Pass rate by config")
    for i, (r, n) in enumerate(zip(rate, rates["rollouts"].to_list(), strict=False)):
        ax.text(i, min(r + 0.03, 0.95), f"{r:.0%} (n={n})", ha="center", fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def trend_png(trend: pl.DataFrame) -> bytes:
    """Pass rate per config over nights, one line each, with 95% Wilson intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nights = sorted(trend["night"].unique().to_list())
    fig, ax = plt.subplots(figsize=(max(4.5, 0.9 * len(nights) + 3), 3.5), dpi=100)
    for (config,), group in sorted(trend.group_by("config_name"), key=lambda g: str(g[0][0])):
        xs = [nights.index(n) for n in group["night"].to_list()]
        rate = group["pass_rate"].to_list()
        err = [[r - lo for r, lo in zip(rate, group["ci_low"].to_list(), strict=True)],
               [hi - r for r, hi in zip(rate, group["ci_high"].to_list(), strict=True)]]
        ax.errorbar(xs, rate, yerr=err, marker="o", capsize=4, label=str(config))
    ax.set_xticks(range(len(nights)), nights, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("pass rate (95% Wilson CI)")
    ax.set_title("Pass rate per config per night")
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def write_png(data: bytes, path: Path) -> str:
    """Save the file and return markdown embedding it, which the UI's metadata panel renders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return f"![{path.stem}](data:image/png;base64,{base64.b64encode(data).decode()})"


# The UI renders markdown metadata inline only under 1,000 characters (longer: a "[Show Markdown]" button).
INLINE_MARKDOWN = 1000
_COLORS = ("royalblue", "darkorange", "seagreen", "crimson", "purple", "saddlebrown", "deeppink", "gray")


def trend_inline_md(trend: pl.DataFrame, budget: int = INLINE_MARKDOWN - 10) -> str:
    """Pass rate per config over the latest nights as an SVG data URI plus a legend, under `budget`
    characters: as many of the latest nights (and configs) as fit; the PNG has them all."""
    nights = sorted(trend["night"].unique().to_list())
    configs = sorted(trend["config_name"].unique().to_list())
    rate = {(r["config_name"], r["night"]): r["pass_rate"] for r in trend.iter_rows(named=True)}
    for n_configs in range(min(len(configs), len(_COLORS)), 0, -1):
        for n_nights in range(len(nights), 0, -1):
            md = _svg_md(nights[-n_nights:], configs[:n_configs], rate)
            if len(md) <= budget:
                return md
    return ""


def _svg_md(nights: list[str], configs: list[str], rate: dict[tuple[str, str], float]) -> str:
    step = 100 / max(1, len(nights) - 1)
    lines = ["<rect width='100' height='40' fill='white' stroke='lightgray'/>"]
    legend = []
    for config, color in zip(configs, _COLORS, strict=False):
        pts = [f"{round(i * step)},{round(38 - 36 * rate[(config, n)])}"
               for i, n in enumerate(nights) if (config, n) in rate]
        lines.append(f"<polyline points='{' '.join(pts)}' fill='none' stroke='{color}' stroke-width='1.5'/>"
                     if len(pts) > 1 else f"<circle cx='{pts[0].split(',')[0]}' cy='{pts[0].split(',')[1]}' "
                     f"r='2' fill='{color}'/>")
        latest = next((rate[(config, n)] for n in reversed(nights) if (config, n) in rate), None)
        legend.append(f"{color}: {config} {latest:.0%}" if latest is not None else f"{color}: {config}")
    svg = ("<svg xmlns='http://www.w3.org/2000/svg' viewBox='-2 -2 104 44' width='360' height='150'>"
           + "".join(lines) + "</svg>")
    uri = "data:image/svg+xml," + quote(svg, safe="/:=',.-")
    return f"![pass rate per night]({uri})\n\n{nights[0]} … {nights[-1]} (0–100 %): " + " · ".join(legend)
