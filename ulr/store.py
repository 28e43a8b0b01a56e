"""The store of click logs: re-exported from :mod:`ulr.data`, where it is split by concept.

- :mod:`ulr.data.catalog`: the files, the catalog and its lock, reader connections,
  listing, renaming and deleting datasets (the store's layout is described there);
- :mod:`ulr.data.ingest`: loading a file (stage, check, refuse or keep, publish), opening
  one without storing it, the bundled sample;
- :mod:`ulr.data.log`: :class:`DatasetInfo` and :class:`Log`, the handles computations take;
- :mod:`ulr.data.summary`: key figures, CTR by position, true theta, a preview.

Kept so that ``store.X`` keeps working; a test that replaces one of the store's
functions or settings patches the module that uses it (:mod:`ulr.data.catalog`).
"""

from __future__ import annotations

from ulr.data.catalog import (  # noqa: F401
    _CAT_COLS, _CATALOG_DDL, _TABLE_RE, BUSY, OPERATOR, NotOwner, DATA_DIR, DEFAULT_DB, LOCK_TIMEOUT_S,
    MAX_CACHED_READS, MEMORY_LIMIT, ROOT, SPILL_ROOT, TRASH_GRACE_S, _catalog_row, _db_of,
    _file_of, _first_line, _fsync, _fsync_dir, _memory_connection, _open_catalog, _resolve,
    _row_to_info, _sql_str, _stamp, _sweep, _sync_views, _table, _tmp_file, _trash, catalog,
    catalog_read, cursor, default_db_path, delete_dataset, files_dir, get_dataset,
    list_datasets, new_memory_cursor, open_dataset, rejected_rows, rename_dataset, waiting)
from ulr.data.ingest import (  # noqa: F401
    SAMPLE_CSV, SAMPLE_NAME, LoadResult, csv_header, ensure_sample, file_hash, load_log,
    open_file, peek_columns, sniff_kind)
from ulr.data.log import DatasetInfo, Log  # noqa: F401
from ulr.data.schema import quote_ident  # noqa: F401
from ulr.data.schema import rule_conditions as schema_rules  # noqa: F401
from ulr.data.summary import ctr_by_position, preview, summary  # noqa: F401
