"""The Spark engine: the same aggregate queries on Spark SQL, through pyspark.

Spark reads Parquet or CSV paths (files, folders, globs; any URI Spark
understands: hdfs://, s3a://, ...) or a table of its catalog. The aggregate
comes back through Arrow and the iterations run locally.

The master is checked before the JVM starts: an unknown form is refused at
once, and a ``spark://host:port`` master must accept a TCP connection within
``CONNECT_TIMEOUT`` seconds, so an unreachable cluster fails fast instead of
retrying for minutes.
"""

from __future__ import annotations

import os
import re
import socket
import tempfile
import uuid
from pathlib import Path

import numpy as np

from ulr.engines.columns import declared_columns, typed_projection
from ulr.errors import UlrError
from ulr.data.scan import Scan

CONNECT_TIMEOUT = 5.0
_LOG4J = Path(__file__).with_name("log4j2.properties")
_MASTER = re.compile(r"^(local(\[(\d+|\*)(,\d+)?\])?|yarn|spark://[^/\s]+|k8s://\S+)$")
_PARAM = re.compile(r"\$(ulr_\w+)")


def check_master(master: str) -> None:
    """Refuse a master Spark could not reach, in bounded time (one sentence)."""
    if not _MASTER.match(master or ""):
        raise UlrError(f"Spark master {master!r} is not one Spark accepts "
                       "(local[N], spark://host:port, yarn or k8s://...).")
    if master.startswith("spark://"):
        for hostport in master[len("spark://"):].split(","):
            host, _, port = hostport.rpartition(":")
            try:
                socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
            except (OSError, ValueError):
                raise UlrError(f"Spark is not reachable at {master!r} (no answer from "
                               f"{hostport} within {CONNECT_TIMEOUT:g} s).") from None


_CLASS = re.compile(r"^\[([A-Z_.]+)\]")


def _reason(exc) -> str:
    """Spark's error class (e.g. CAST_INVALID_INPUT), never the values it quotes."""
    m = _CLASS.match(str(exc).strip())
    return f" ({m.group(1)})" if m else ""


class _Result:
    """A lazy Spark result; the query runs when it is fetched (errors: one sentence)."""

    def __init__(self, df, name):
        self.df, self.name = df, name

    def _run(self, action):
        from pyspark.errors import PySparkException
        try:
            return action()
        except PySparkException as exc:  # e.g. a value that does not cast (ANSI mode)
            raise UlrError(f"Spark could not aggregate {self.name!r}{_reason(exc)}.") from None

    def fetchnumpy(self) -> dict:
        pdf = self._run(self.df.toPandas)
        return {c: pdf[c].to_numpy() for c in pdf.columns}

    def fetchall(self) -> list[tuple]:
        return [tuple(r) for r in self._run(self.df.collect)]

    def fetchone(self):
        rows = self._run(self.df.limit(1).collect)
        return tuple(rows[0]) if rows else None


class _Cursor:
    """Runs the portable SQL on Spark: ``$ulr_x`` parameters become ``:ulr_x``."""

    def __init__(self, spark, name):
        self.spark, self.name = spark, name

    def execute(self, sql, params=None):
        from pyspark.errors import PySparkException
        args = {k: (v.item() if isinstance(v, np.generic) else v)
                for k, v in (params or {}).items() if f"${k}" in sql}
        text = _PARAM.sub(r":\1", sql)
        try:
            return _Result(self.spark.sql(text, args=args or None), self.name)
        except PySparkException as exc:
            raise UlrError(f"Spark could not aggregate {self.name!r}{_reason(exc)}.") from None


class SparkEngine:
    """Aggregates run on Spark (``master`` e.g. ``local[2]`` or ``spark://host:7077``).

    ``conf`` is passed to the SparkSession builder (``spark.executor.memory``
    and so on). An active SparkSession (e.g. in a notebook or a test) is reused
    when ``master`` is None.
    """

    name = "spark"

    def __init__(self, master: str | None = "local[2]", conf: dict | None = None,
                 session=None):
        self.master, self.conf, self._spark = master, dict(conf or {}), session

    @property
    def spark(self):
        if self._spark is None:
            from pyspark.sql import SparkSession
            active = SparkSession.getActiveSession()
            if active is not None and self.master is None:
                self._spark = active
            else:
                check_master(self.master or "local[2]")
                self._spark = _start(self.master or "local[2]", self.conf)
        return self._spark

    def _read(self, path: str):
        from pyspark.errors import PySparkException
        low = path.lower().rstrip("/")
        fmt = "csv" if low.endswith(".csv") or low.endswith(".csv.gz") else "parquet"
        if not re.match(r"^[a-z][a-z0-9+.-]*://", path):  # local: look at the files
            from ulr.engines.duckdb import expand
            fmt = expand(path)[1]
        reader = self.spark.read.format(fmt)
        if fmt == "csv":  # every value as text; the projection casts to the declared types
            reader = reader.option("header", True).option("inferSchema", False)
        try:
            return reader.load(path)
        except PySparkException as exc:
            msg = str(exc).splitlines()[0]
            if "PATH_NOT_FOUND" in msg or "does not exist" in msg:
                raise UlrError(f"no Parquet or CSV file matches {path!r}; check the path (a "
                               "file, a folder or a glob such as 'lake/*.parquet').") from None
            raise UlrError(f"Spark cannot read {path!r}{_reason(exc)}.") from None

    def scan(self, *, path: str | None = None, table: str | None = None) -> Scan:
        from pyspark.errors import PySparkException
        if (path is None) == (table is None):
            raise UlrError("give either a path or a table name.")
        if table is not None:
            try:
                df = self.spark.table(table)
            except PySparkException:
                raise UlrError(f"Spark has no table {table!r}.") from None
        else:
            if not re.match(r"^[a-z][a-z0-9+.-]*://", str(path)):  # before the JVM starts
                from ulr.engines.duckdb import expand
                expand(str(path))
            df = self._read(str(path))
        cols = declared_columns(df.columns)
        view = f"ulr_src_{uuid.uuid4().hex[:12]}"
        df.createOrReplaceTempView(view)
        name = table or str(path).rstrip("/").rsplit("/", 1)[-1]
        return Scan(cur=_Cursor(self.spark, name), from_sql=typed_projection(cols, view),
                    params={}, columns=tuple(cols), name=name, checked=True)


_BASE_CONF = {"spark.ui.enabled": "false",
              "spark.ui.showConsoleProgress": "false",  # stderr is for errors
              "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={_LOG4J}"}
_launched = False  # whether this process started its JVM through _start


def driver_log() -> Path:
    """Where the JVM this process starts writes its own output (stdout, stderr, log4j)."""
    return Path(tempfile.gettempdir()) / "ulr-spark" / f"driver-{os.getpid()}.log"


def _same_master(master: str) -> None:
    """Refuse a master other than the one this process's Spark already runs on.

    A process has one SparkContext; asking the builder for another master
    silently returns the running one, so a dashboard source registered with a
    new master would run (and be recorded) on the old one.
    """
    from pyspark import SparkContext
    sc = SparkContext._active_spark_context
    if sc is not None and sc.master != master:
        raise UlrError(f"Spark already runs here on master {sc.master!r}, and one process "
                       f"keeps one master: use {sc.master!r}, or restart to use {master!r}.")


def _start(master: str, conf: dict):
    """A SparkSession whose JVM writes to :func:`driver_log`, not to this process's stderr.

    The JVM inherits stdout and stderr from the process that launches it, and
    prints before any log configuration applies (the JDK's incubator-module
    warning, Spark's "Setting default log level"), so only its own streams can
    keep the CLI's stderr to one ``error:`` line. pyspark's ``launch_gateway``
    takes the streams for the JVM (``popen_kwargs``); the SparkContext is then
    built on that gateway. When this process already has a JVM (a notebook's
    or a test's session), the session is taken from it as usual.
    """
    global _launched
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession
    settings = {**_BASE_CONF, **conf}

    def from_builder():
        b = SparkSession.builder.master(master).appName("ulr")
        for k, v in settings.items():
            b = b.config(k, v)
        return b.getOrCreate()
    try:
        # a JVM this process already has (ours, or a notebook's or a test's, perhaps made
        # in another thread, where getActiveSession() is None): a session on it
        if _launched or SparkContext._active_spark_context is not None:
            _same_master(master)
            return from_builder()
        from pyspark.java_gateway import launch_gateway
        sconf = SparkConf(loadDefaults=False).setMaster(master).setAppName("ulr")
        sconf.setAll(list(settings.items()))
        log = driver_log()
        log.parent.mkdir(parents=True, exist_ok=True)
        _prune(log.parent)
        with open(log, "ab") as out:
            gateway = launch_gateway(sconf, popen_kwargs={"stdout": out, "stderr": out})
        try:
            SparkContext(conf=sconf, gateway=gateway)
        except ValueError:  # a SparkContext made in another thread: use it, drop this JVM
            gateway.shutdown()
            if gateway.proc is not None:
                gateway.proc.kill()
            return from_builder()
        _launched = True
        return SparkSession.builder.getOrCreate()
    except Exception as exc:  # JVM did not start, bad configuration, ...
        raise UlrError(f"Spark did not start: {str(exc).splitlines()[0]} (Spark's own log: "
                       f"{driver_log()}).") from None


def _prune(folder: Path, days: float = 7) -> None:
    """Drop driver logs older than ``days`` (one file per process that started Spark)."""
    import time
    for f in folder.glob("driver-*.log"):
        try:
            if time.time() - f.stat().st_mtime > days * 86400:
                f.unlink()
        except OSError:
            pass
