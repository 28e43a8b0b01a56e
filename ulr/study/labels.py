"""Labelled learning-to-rank data: LETOR / SVMlight files, or CSV / Parquet tables.

A :class:`LabelledSet` holds graded judgements and features per (query, document), the
input of the semi-synthetic study (Joachims et al. 2017). Features are ``float32`` and
dense: an MSLR-WEB30K fold (about 2.3M rows x 136 features) takes 1.25 GB.

LETOR files (``grade qid:Q 1:v 2:v ... # comment``, as MSLR, Yahoo and Istella ship them)
are parsed by scikit-learn's ``load_svmlight_file(query_id=True)``; a file whose every line
lists the features 1..P in order (MSLR, Istella) is read by a compiled loop
(:mod:`ulr.study.letor_jit`), to the same arrays, many times faster (docs/benchmarks.md).
A line the parser refuses, or a line without ``qid:``, is found again by a line-by-line
check and named in a :class:`MalformedLine` error.

The rows are put in one canonical order where they are read (:func:`_grouped`): queries by
id, a query's documents by ``doc_id`` (a table) or by a hash of their values (LETOR). The same
rows in any order give the same set, and so the same study, bit for bit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ulr.errors import TooFewQueries, UlrError

#: extensions read as LETOR / SVMlight text
LETOR_SUFFIXES = (".txt", ".svm", ".svmlight", ".letor", ".libsvm", ".dat")
TABLE_SUFFIXES = (".csv", ".parquet", ".pq")
#: the seeded share of queries held out when no test file is given
TEST_FRACTION = 0.3

# one LETOR line: grade, qid, index:value pairs, optional comment
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_LINE = re.compile(rf"^\s*({_NUM})\s+qid:(\S+)((?:\s+\d+:(?:{_NUM}|nan|inf|-inf))*)\s*(?:#.*)?$",
                   re.IGNORECASE)


class MalformedLine(UlrError):
    """A LETOR line that is not ``grade qid:Q index:value ...``; ``line`` is its number
    (1-based)."""

    field = "labels"

    def __init__(self, message: str, *, line: int):
        super().__init__(message)
        self.line = int(line)


@dataclass(frozen=True)
class LabelledSet:
    """Judged documents grouped by query.

    Attributes
    ----------
    X : ndarray of shape (n, p), float32
        Features, rows grouped by query (each query's rows contiguous).
    relevance : ndarray of shape (n,), float32
        Graded judgements (>= 0).
    qid : ndarray of shape (n,), int64
        Query number 0..Q-1 of every row (contiguous, increasing).
    query_ids : ndarray of shape (Q,)
        The file's query identifiers, by query number.
    doc_ids : ndarray of shape (n,) or None
        The file's document identifiers (a table's ``doc_id``), None for LETOR.
    features : list of str
        Feature names (``feature_1`` ... for LETOR, the table's ``feature_*`` columns).
    source : str
        Where it was read from (a file name).
    """

    X: np.ndarray
    relevance: np.ndarray
    qid: np.ndarray
    query_ids: np.ndarray
    features: list
    doc_ids: np.ndarray | None = None
    source: str = ""
    starts: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        n = self.X.shape[0]
        if self.relevance.shape != (n,) or self.qid.shape != (n,):
            raise ValueError("X, relevance and qid must have one row per document.")
        if n and np.any(np.diff(self.qid) < 0):
            raise ValueError("rows must be grouped by query (qid increasing).")
        counts = np.bincount(self.qid, minlength=len(self.query_ids))
        object.__setattr__(self, "starts", np.r_[0, np.cumsum(counts)].astype(np.int64))

    @property
    def n_queries(self) -> int:
        return int(len(self.query_ids))

    @property
    def n_documents(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def counts(self) -> np.ndarray:
        """Documents per query."""
        return np.diff(self.starts)

    def subset(self, queries) -> "LabelledSet":
        """The set restricted to the given query numbers (kept in their order)."""
        queries = np.sort(np.asarray(queries, dtype=np.int64))
        counts = self.counts[queries]
        rows = np.concatenate([np.arange(self.starts[q], self.starts[q + 1]) for q in queries]
                              ) if len(queries) else np.empty(0, dtype=np.int64)
        return LabelledSet(X=self.X[rows], relevance=self.relevance[rows],
                           qid=np.repeat(np.arange(len(queries)), counts),
                           query_ids=self.query_ids[queries], features=list(self.features),
                           doc_ids=None if self.doc_ids is None else self.doc_ids[rows],
                           source=self.source)


def read_labels(path, *, name: str | None = None) -> LabelledSet:
    """Read a labelled set: LETOR / SVMlight text, or CSV / Parquet (by extension).

    ``name`` is the file name shown in messages (an upload's own name).
    """
    path = Path(path)
    shown = name or path.name
    if not path.is_file():
        raise UlrError(f"cannot read {shown}: no such file.")
    suffix = Path(shown).suffix.lower() or path.suffix.lower()
    if suffix in TABLE_SUFFIXES:
        return read_table(path, name=shown)
    return read_letor(path, name=shown)


def read_letor(path, *, name: str | None = None) -> LabelledSet:
    """Read a LETOR / SVMlight file with ``sklearn.datasets.load_svmlight_file``.

    Feature indices are 1-based (``1:v`` is ``feature_1``), as MSLR, Yahoo and Istella
    write them; a missing index is 0 (sparse). Comments after ``#`` are ignored. Rows are
    grouped by ``qid`` and put in one order whatever the file's (:func:`_grouped`): queries
    by qid, a query's rows by a hash of their values. Grades must be >= 0.

    Raises
    ------
    MalformedLine
        naming the first line that is not ``grade qid:Q index:value ...``.
    """
    from sklearn.datasets import load_svmlight_file

    path = Path(path)
    shown = name or path.name
    dense = _read_dense(path)
    if dense is not None:  # every line lists features 1..P in order: a compiled loop
        y, q, X = dense
        return _grouped(X, y, q, [f"feature_{j + 1}" for j in range(X.shape[1])], None, shown)
    try:
        X, y, q = load_svmlight_file(str(path), query_id=True, dtype=np.float32,
                                     zero_based=False)
    except (ValueError, UnicodeDecodeError) as exc:
        _raise_first_bad_line(path, shown, exc)
    if len(q) != len(y):  # a line without qid: sklearn returns fewer query ids
        _raise_first_bad_line(path, shown, None)
    if len(y) == 0:
        raise UlrError(f"{shown} holds no judged document.")
    y = np.asarray(y, dtype=np.float32)
    bad = np.flatnonzero(~np.isfinite(y) | (y < 0))
    if bad.size:
        line = _line_of_row(path, int(bad[0]))
        raise MalformedLine(f"Line {line} of {shown} has the grade {y[bad[0]]:g}; grades must "
                            "be whole numbers or decimals of 0 or more.", line=line)
    dense = X.toarray()
    del X
    if not np.isfinite(dense).all():
        row = int(np.flatnonzero(~np.isfinite(dense).all(axis=1))[0])
        line = _line_of_row(path, row)
        raise MalformedLine(f"Line {line} of {shown} has a feature value that is not a finite "
                            "number.", line=line)
    features = [f"feature_{j + 1}" for j in range(dense.shape[1])]
    return _grouped(dense, y, np.asarray(q), features, None, shown)


def _read_dense(path: Path, block_bytes: int = 1 << 24):
    """``(grades, qids, X)`` when every data line lists the features 1..P in order (MSLR,
    Istella), parsed block by block by a compiled loop (:mod:`ulr.study.letor_jit`: the
    same numbers as ``strtod``, many times faster than a tokenizer); None for any other
    file (sparse lines, a malformed line: the svmlight path reads it and names the line)."""
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    first = next((ln for ln in head.splitlines() if ln.split(b"#", 1)[0].strip()), b"")
    tokens = first.split(b"#", 1)[0].split()
    p = len(tokens) - 2
    if p < 1 or not tokens[1].startswith(b"qid:") or \
            [t.split(b":", 1)[0] for t in tokens[2:]] != [str(j + 1).encode() for j in range(p)]:
        return None
    from ulr.study.letor_jit import _POW10, parse_all
    # the page cache's copy of the file, not one of ours
    buf = np.memmap(path, dtype=np.uint8, mode="r").view(np.ndarray)
    # blocks of about ``block_bytes``, each ending just after a newline, parsed in parallel
    cuts = [0]
    for at in range(block_bytes, buf.size, block_bytes):
        if at <= cuts[-1]:
            continue
        nl = _next_newline(buf, at)
        if nl < 0:
            break
        cuts.append(nl + 1)
    if cuts[-1] != buf.size:
        cuts.append(buf.size)
    X, y, q, ok = parse_all(buf, np.asarray(cuts, dtype=np.int64), p, _POW10)
    del buf
    if not ok or y.size == 0:
        return None
    return y, q, X


def _next_newline(buf, at: int) -> int:
    """Index of the first newline at or after ``at`` (-1 when none)."""
    step = 1 << 16
    while at < buf.size:
        hit = np.flatnonzero(buf[at:at + step] == 10)
        if hit.size:
            return at + int(hit[0])
        at += step
    return -1


def _grouped(X, y, q, features, doc_ids, shown) -> LabelledSet:
    """The rows in one canonical order, whatever the file's: queries by id, and a query's
    documents by ``doc_id`` (a table) or, where the file names no document (LETOR), by a
    hash of the row's grade and features (:func:`ulr.study.letor_jit.row_hashes`: not by
    the grade itself, which would break a ranker's ties by relevance; rows with one hash
    are identical, hence interchangeable). Ids sort numerically when every one is a
    whole number, as text otherwise (:func:`_id_order`); the sorts are stable. So the same rows in any order give
    the same set, bit for bit, and the same study; a file already in that order keeps its
    rows where they are. A LETOR file's ``X`` is reordered in place when it is a writable
    C-contiguous float32 array (the readers pass their own, which they do not keep): no
    second copy of the features.
    """
    X = np.ascontiguousarray(X, dtype=np.float32)
    y = np.ascontiguousarray(y, dtype=np.float32)
    n = y.size
    codes, uniques = pd.factorize(q, sort=False)
    uniques = np.asarray(uniques)
    by_id = _id_order(uniques)
    codes, uniques = _ranks(by_id)[codes], uniques[by_id]
    if doc_ids is not None:
        dcodes, duniques = pd.factorize(doc_ids, sort=False)
        order = np.lexsort((_ranks(_id_order(np.asarray(duniques)))[dcodes], codes))
    else:  # a hash of each row's values (compiled: LETOR files are large)
        from ulr.study.letor_jit import row_hashes
        order = np.lexsort((row_hashes(X.view(np.int32), y.view(np.int32)), codes))
    if not np.array_equal(order, np.arange(n)):
        if doc_ids is None and X.flags.writeable:
            from ulr.study.letor_jit import permute_rows
            X = permute_rows(X, order)
        else:  # a table, already held twice by pandas: no need to load numba for it
            X = X[order]
        y, codes = y[order], codes[order]
        doc_ids = None if doc_ids is None else doc_ids[order]
    return LabelledSet(X=X, relevance=y, qid=codes.astype(np.int64), query_ids=uniques,
                       features=features, doc_ids=doc_ids, source=shown)


def _id_order(ids: np.ndarray) -> np.ndarray:
    """The stable argsort of distinct identifiers: numerically when every one is a whole
    number (a LETOR qid, a table's integer column: a file sorted by qid keeps its order),
    otherwise as text."""
    kind = ids.dtype.kind
    if kind in "iub" or (kind == "f" and np.all(np.mod(ids, 1) == 0)):
        return np.argsort(ids, kind="stable")
    if kind == "O" and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                           for v in ids):
        return np.asarray(sorted(range(ids.size), key=ids.__getitem__), dtype=np.int64)
    return np.argsort(ids.astype(str), kind="stable")


def _ranks(by: np.ndarray) -> np.ndarray:
    """The place of every identifier in the order ``by`` (:func:`_id_order`'s)."""
    rank = np.empty(by.size, dtype=np.int64)
    rank[by] = np.arange(by.size)
    return rank


def _lines(path: Path):
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            yield number, raw


def _data_line(raw: bytes) -> bool:
    s = raw.split(b"#", 1)[0].strip()
    return bool(s)


def _raise_first_bad_line(path: Path, shown: str, exc) -> None:
    """Find the first line that is not a LETOR line and raise :class:`MalformedLine`."""
    for number, raw in _lines(path):
        if not _data_line(raw):
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedLine(f"Line {number} of {shown} is not text (UTF-8).",
                                line=number) from None
        m = _LINE.match(text.rstrip("\r\n"))
        if m is None:
            raise MalformedLine(f"Line {number} of {shown} is not a LETOR line "
                                f"(grade qid:Q 1:v 2:v ...): {_excerpt(text)}",
                                line=number) from None
        idx = [int(p.split(":", 1)[0]) for p in m.group(3).split()]
        if any(i < 1 for i in idx):
            raise MalformedLine(f"Line {number} of {shown} has feature index 0; LETOR "
                                "feature indices start at 1.", line=number) from None
        if any(b <= a for a, b in zip(idx, idx[1:])):
            raise MalformedLine(f"Line {number} of {shown} lists its feature indices out of "
                                "order.", line=number) from None
    detail = "" if exc is None else f" ({' '.join(str(exc).split())[:120]})"
    raise UlrError(f"{shown} is not a LETOR file{detail}.")


def _line_of_row(path: Path, row: int) -> int:
    """The line number of the ``row``-th data line (0-based)."""
    seen = -1
    for number, raw in _lines(path):
        if _data_line(raw):
            seen += 1
            if seen == row:
                return number
    return row + 1


def _excerpt(text: str) -> str:
    t = " ".join(text.split())
    return f"“{t[:60]}…”" if len(t) > 60 else f"“{t}”"


# --------------------------------------------------------------------------- tables


def read_table(path, *, name: str | None = None) -> LabelledSet:
    """Read a CSV or Parquet table with ``query_id``, ``doc_id``, ``relevance`` and
    ``feature_*`` columns (one row per judged document), ordered by query id, then doc id
    (:func:`_grouped`)."""
    path = Path(path)
    shown = name or path.name
    suffix = Path(shown).suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            df = pd.read_parquet(path)
        else:
            df = pd.read_csv(path, low_memory=False)
    except Exception as exc:  # noqa: BLE001 - pandas and pyarrow raise many types
        raise UlrError(f"cannot read {shown}: {' '.join(str(exc).split())[:160]}") from None
    missing = [c for c in ("query_id", "doc_id", "relevance") if c not in df.columns]
    features = [c for c in df.columns if str(c).startswith("feature_")]
    if missing:
        raise UlrError(f"{shown} needs the column(s) {', '.join(missing)}.")
    if not features:
        raise UlrError(f"{shown} has no feature_* column to learn from.")
    if len(df) == 0:
        raise UlrError(f"{shown} holds no judged document.")
    if df["query_id"].isna().any() or df["doc_id"].isna().any():
        raise UlrError(f"{shown}: query_id and doc_id must not be empty.")
    rel = pd.to_numeric(df["relevance"], errors="coerce")
    bad = np.flatnonzero(rel.isna().to_numpy() | (rel < 0).to_numpy())
    if bad.size:
        raise UlrError(f"Row {int(bad[0]) + 1} of {shown} has the relevance "
                       f"{_excerpt(str(df['relevance'].iloc[bad[0]]))}; relevance must be a "
                       "number of 0 or more.")
    X = np.empty((len(df), len(features)), dtype=np.float32)
    for j, c in enumerate(features):
        col = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=np.float32)
        if not np.isfinite(col).all():
            row = int(np.flatnonzero(~np.isfinite(col))[0])
            raise UlrError(f"Row {row + 1} of {shown} has no number in {c}; features must be "
                           "finite numbers.")
        X[:, j] = col
    if df.duplicated(["query_id", "doc_id"]).any():
        row = int(np.flatnonzero(df.duplicated(["query_id", "doc_id"]).to_numpy())[0])
        raise UlrError(f"Row {row + 1} of {shown} repeats a (query_id, doc_id) pair; give "
                       "each judged document once.")
    return _grouped(X, rel.to_numpy(dtype=np.float32), df["query_id"].to_numpy(), features,
                    df["doc_id"].to_numpy(), shown)


# --------------------------------------------------------------------------- split


def split_queries(data: LabelledSet, *, test_fraction: float = TEST_FRACTION, seed: int = 0
                  ) -> tuple[LabelledSet, LabelledSet]:
    """Hold out a seeded ``test_fraction`` of the queries (ids sorted as text first, so the
    split depends on the seed, not on the file's order)."""
    if not 0.0 < float(test_fraction) < 1.0:
        raise UlrError(f"test fraction must be in (0, 1), got {test_fraction}.")
    n = data.n_queries
    if n < 2:
        raise TooFewQueries("Holding out test queries needs at least two queries.")
    key = np.argsort(data.query_ids.astype(str), kind="stable")
    n_test = min(max(1, int(round(float(test_fraction) * n))), n - 1)
    perm = np.random.default_rng(seed).permutation(n)
    test = key[perm[:n_test]]
    train = np.setdiff1d(np.arange(n), test)
    return data.subset(train), data.subset(test)


def same_features(train: LabelledSet, test: LabelledSet) -> LabelledSet:
    """``test`` with the features of ``train`` (a LETOR test file may stop at a lower
    index: the missing trailing features are 0); refuses different named features."""
    if train.features == test.features:
        return test
    if all(f.startswith("feature_") and f[8:].isdigit() for f in train.features + test.features) \
            and test.doc_ids is None and train.doc_ids is None:
        p = train.n_features
        X = np.zeros((test.n_documents, p), dtype=np.float32)
        k = min(p, test.n_features)
        X[:, :k] = test.X[:, :k]
        return LabelledSet(X=X, relevance=test.relevance, qid=test.qid,
                           query_ids=test.query_ids, features=list(train.features),
                           doc_ids=None, source=test.source)
    raise UlrError(f"The test file's features ({len(test.features)}) are not the training "
                   f"file's ({len(train.features)}); give both the same feature_* columns.")
