"""Click logs: the schema and mapping, the store, log handles, scans and summaries.

The bottom layer of ulr (nothing here imports estimators, engines, commands or pages;
``tests/data/test_layers.py`` holds it to that):

- :mod:`ulr.data.schema`: the canonical fields, their types, identifier allow-lists and
  the schema rules as SQL conditions.
- :mod:`ulr.data.mapping`: how a file's columns become the schema (:class:`Mapping`,
  column plans, composite keys, constants, declared facts).
- :mod:`ulr.data.catalog`: the store's files, its catalog and lock, reader connections,
  listing, renaming and deleting datasets (only by their owner or the operator).
- :mod:`ulr.data.ingest`: loading a file (stage, check, refuse or keep, publish) and
  opening one without storing it.
- :mod:`ulr.data.precheck`: the mapping checked on a file's first rows before it is loaded.
- :mod:`ulr.data.log`: :class:`DatasetInfo` and :class:`Log`, the handle of a stored log.
- :mod:`ulr.data.scan`: :class:`Scan`, the rows of a log to aggregate on any engine, and
  their cell statistics (:func:`cell_stats`).
- :mod:`ulr.data.summary`: key figures, CTR by position with Wilson intervals, true theta.

Each name has one import path: the module where it lives.
"""
