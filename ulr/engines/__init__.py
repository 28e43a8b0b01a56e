"""Where the aggregate queries run: DuckDB on this machine, or Spark where the logs live.

Every estimator starts with ONE aggregate query (:mod:`ulr.propensity.aggregate`
and the ``collect`` functions of the estimators); the numeric iterations then
run locally in numpy. An engine (:class:`~ulr.engines.duckdb.DuckDBEngine`,
:class:`~ulr.engines.spark.SparkEngine`) turns a source -- a file, a folder, a
glob or (Spark) a table -- into a :class:`~ulr.data.scan.Scan`
whose ``execute`` runs those same SQL statements on the engine. The SQL is
written once, in the portable subset both engines share (``GROUP BY``,
``count(*) FILTER``, window functions, ``md5``/``instr`` for the bootstrap
buckets); an engine only supplies the reader and the parameter style.

The engines are found by name in :data:`ENGINES` and imported when asked for, so this
package imports neither at its top (and neither engine imports it: the SQL both share lives
in :mod:`ulr.engines.columns`).
"""

from __future__ import annotations

import importlib

from ulr.errors import UlrError

# engine name -> (module, class, whether it takes options), imported on first use: a
# DuckDB-only run never loads pyspark
ENGINES = {"duckdb": ("ulr.engines.duckdb", "DuckDBEngine", False),
           "spark": ("ulr.engines.spark", "SparkEngine", True)}


def get(name: str, **options):
    """The engine called ``name`` (``duckdb`` or ``spark``); Spark options:
    ``master`` and ``conf`` (a dict), see :class:`ulr.engines.spark.SparkEngine`; DuckDB
    takes none and ignores them."""
    if name not in ENGINES:
        raise UlrError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}.")
    module, cls, takes_options = ENGINES[name]
    engine = getattr(importlib.import_module(module), cls)
    return engine(**options) if takes_options else engine()
