"""Click logs: the schema and mapping, the store, log handles, scans and summaries.

The bottom layer of ulr (nothing here imports estimators, engines or commands):

- :mod:`ulr.data.scan`: :class:`~ulr.data.scan.Scan`, the rows of a log to aggregate on
  any engine, and their cell statistics (:func:`~ulr.data.scan.cell_stats`).
- :mod:`ulr.data.summary`: per-position summaries (CTR with Wilson intervals, true theta).
"""
