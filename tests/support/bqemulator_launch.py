"""Starts bqemulator (a BigQuery API emulator on DuckDB) offline; run with the emulator's own
virtualenv (`tests/support/bigquery_emulator.py` builds it), never the project's:

    python bqemulator_launch.py start --rest-port P --grpc-port G --project test-proj

It passes its arguments to bqemulator's CLI after three patches, made in memory at start (no
installed file is edited); all replace private names of bqemulator 1.4.0:

1. DuckDB's `spatial` extension is made optional. bqemulator refuses to start without it
   (GEOGRAPHY and the ST_* functions are built on it), and DuckDB downloads it from
   extensions.duckdb.org, which this machine cannot reach. Without it only GEOGRAPHY is lost;
   Newsbench's tables have none.
2. Uploads whose media part is typed `*/*` are accepted. google-cloud-bigquery sends that type
   in the multipart upload of `load_table_from_dataframe` / `load_table_from_file` (the
   production IO manager's load jobs), and bqemulator's whitelist of media types lacks it.
3. CSV loads honour `skipLeadingRows` (BigQuery's default: 0) and the declared delimiter and
   quote. bqemulator reads every CSV as having a header row and lets DuckDB sniff the dialect,
   so the first row of each load job vanished without an error: the client writes a frame's
   CSV without a header, and a one-row partition loaded as none.

The avro extension (Avro load and extract jobs, unused here) is not tried either: it too would
be downloaded, and failing costs about two seconds at each start.
"""

import os
import sys

os.environ.setdefault("BQEMU_ENABLE_FORMAT_EXTENSIONS", "false")

from bqemulator.api.routes import upload as _upload  # noqa: E402
from bqemulator.jobs import executor as _executor  # noqa: E402
from bqemulator.storage import engine as _engine  # noqa: E402


def _load_spatial_optional(self) -> None:
    try:
        self._connection.execute("LOAD spatial")
    except Exception as exc:  # not installed, and cannot be downloaded
        print(
            f"bqemulator launcher: spatial unavailable, GEOGRAPHY disabled ({type(exc).__name__})",
            file=sys.stderr,
        )


_load_into_target = _executor._load_path_into_target


def _load_csv_as_declared(path: str, job, ctx) -> None:
    if job.source_format != "CSV":
        return _load_into_target(path, job, ctx)
    config = job.raw_config
    skip = int(config.get("skipLeadingRows") or 0)
    delimiter = config.get("fieldDelimiter") or ","
    quote = config.get("quote", '"')
    ctx.engine.execute(
        f"COPY {job.target_ref} FROM ? "
        "(FORMAT CSV, HEADER false, SKIP ?, DELIM ?, QUOTE ?, ESCAPE ?, AUTO_DETECT false)",
        [path, skip, delimiter, quote, quote],
    )


_engine.DuckDBEngine._load_spatial = _load_spatial_optional
_upload._PERMITTED_MEDIA_CONTENT_TYPES = (*_upload._PERMITTED_MEDIA_CONTENT_TYPES, "*/*")
_executor._load_path_into_target = _load_csv_as_declared

from bqemulator.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
