"""One export of some rollouts in one format, with its `<format>_report.json`: what the CLI and the
Dagster export assets both call."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from mimo_core.errors import ConfigError
from mimo_core.exports.report import ExportReport
from mimo_core.exports.source import ExportFilter, RolloutRef, select_rollouts

FORMATS = ("sft", "rl", "atif")


class EmptyExport(ConfigError):
    """Nothing to export: no file is written (a 0-row parquet is what a loader chokes on), only the report."""

    def __init__(self, message: str, report: ExportReport | None = None) -> None:
        super().__init__(message)
        self.report = report


def _exporter(fmt: str) -> Callable[..., ExportReport]:
    if fmt == "sft":
        from mimo_core.exports.sft import export_sft

        return export_sft
    if fmt == "rl":
        from mimo_core.exports.rl import export_rl

        return export_rl
    if fmt == "atif":
        from mimo_core.exports.atif import export_atif

        return export_atif
    raise ValueError(f"unknown export format {fmt!r}; known: {', '.join(FORMATS)}")


def write_export(
    fmt: str,
    refs: list[RolloutRef],
    dest: Path,
    unreadable: Mapping[str, str] | None = None,
    flt: ExportFilter | None = None,
) -> ExportReport:
    """Write `refs` into `dest` (created) in format `fmt`, and the report beside it; `unreadable` (folder →
    why) is reported as left out too. Raises EmptyExport, naming why, when no row would be written."""
    exporter = _exporter(fmt)
    dest.mkdir(parents=True, exist_ok=True)
    report = exporter(refs, dest, flt or ExportFilter())
    for folder, why in (unreadable or {}).items():
        report.skip(folder, why)
    path = report.write(dest)
    if report.rows == 0:
        raise EmptyExport(
            f"{fmt}: nothing to export: 0 of {len(refs)} selected rollouts gave a row"
            f"{report.reasons()}; no {fmt} file written (the report: {path})",
            report,
        )
    return report


def run_export(fmt: str, output_dirs: list[Path], dest: Path, flt: ExportFilter | None = None) -> ExportReport:
    """Every rollout of `output_dirs` the filter keeps, exported to `dest`."""
    return write_export(fmt, select_rollouts(output_dirs, flt), dest, flt=flt)
