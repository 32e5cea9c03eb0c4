"""The IO manager of the results table: a polars DataFrame stored as parquet under the output store's
`tables/` folder and handed to the analytics assets and checks as their input, so no asset re-reads a
fixed path by hand. Built on Dagster's own `UPathIOManager` (the base dagster-polars uses too)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from dagster import ConfigurableIOManagerFactory, InputContext, OutputContext, UPathIOManager

from resources.output_store import OutputStore

if TYPE_CHECKING:
    from upath import UPath


class PolarsParquetIOManager(UPathIOManager):
    extension = ".parquet"

    def dump_to_path(self, context: OutputContext, obj: Any, path: UPath) -> None:
        """Atomically: a reader (the UI, a notebook, an analytics step) never sees half a table."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = f"{path}.tmp-{os.getpid()}"
        obj.write_parquet(tmp)
        os.replace(tmp, str(path))

    def load_from_path(self, context: InputContext, path: UPath) -> Any:
        import polars as pl

        return pl.read_parquet(str(path))


class TablesIOManager(ConfigurableIOManagerFactory):
    output_store: OutputStore

    def create_io_manager(self, context: Any) -> PolarsParquetIOManager:
        from upath import UPath

        return PolarsParquetIOManager(base_path=UPath(self.output_store.tables_dir()))
