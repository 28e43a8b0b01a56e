"""Click logs: the schema and mapping, the store, log handles, scans and summaries.

The bottom layer of ulr (nothing here imports estimators, engines, commands or pages), itself
layered bottom-up: a module imports only modules above it in this list (two of one step know
nothing of each other), never a private name of another one, and nothing runs at import.
``tests/data/test_layers.py`` holds it to that.

- :mod:`ulr.data.schema`: the canonical fields, their types, identifier allow-lists and
  the schema rules as SQL conditions.
- :mod:`ulr.data.mapping`: how a file's columns become the schema (:class:`~ulr.data.mapping.Mapping`,
  column plans, composite keys, constants, declared facts).
- :mod:`ulr.data.files`: the store's files: their paths, sniffing a file's kind and header,
  fsync, temporary files, the trash, spill folders, in-memory connections, and the settings
  (read on first use or by :func:`ulr.data.files.configure`).
- :mod:`ulr.data.log`: :class:`~ulr.data.log.DatasetInfo` and :class:`~ulr.data.log.Log`, the handle of a stored log.
- :mod:`ulr.data.catalog` and :mod:`ulr.data.scan`:
  - catalog: the lock, the catalog rows, publishing a load, reader connections, listing,
    renaming and deleting datasets (only by their owner or the operator);
  - scan: :class:`~ulr.data.scan.Scan`, the rows of a log to aggregate on any engine, and their cell
    statistics (:func:`~ulr.data.scan.cell_stats`).
- :mod:`ulr.data.ingest` and :mod:`ulr.data.summary`:
  - ingest: loading a file (stage, check, refuse or keep, publish) and opening one without
    storing it;
  - summary: key figures, CTR by position with Wilson intervals, true theta.
- :mod:`ulr.data.precheck`: the mapping checked on a file's first rows before it is loaded.

Each name has one import path: the module where it lives.
"""
