"""The order of a labelled file's rows does not matter (ulr.study.labels): the rows are put
in one canonical order where they are read - queries by id (numerically when every id is a
whole number, else as text), a query's documents by ``doc_id`` (tables) or by a hash of
their values (LETOR) - so the same rows in any order give the same study, bit for bit."""

import numpy as np
import pandas as pd
import pytest

from tests.study.letor import linear_set, letor_text
from ulr.study import read_labels, run_study

FAST = dict(learners=["naive-linear", "ipw-linear"], sessions=1500, runs=2, n_bootstrap=200,
            seed=0)


def _study(path):
    return run_study(read_labels(path), **FAST)


def _table(ids: str) -> pd.DataFrame:
    """A labelled table whose query and doc ids are text (``q7``, ``q7-d3``) or whole
    numbers (whose text order is not their numeric order: 2 < 10 but "10" < "2")."""
    data = linear_set(queries=40, docs=8, seed=7)
    q = data.query_ids[data.qid]
    local = np.arange(data.n_documents) - data.starts[data.qid]
    df = pd.DataFrame({"query_id": [f"q{v}" for v in q] if ids == "text" else q * 5,
                       "doc_id": [f"q{a}-d{b}" for a, b in zip(q, local)] if ids == "text"
                       else q * 100 + local * 3,
                       "relevance": data.relevance.astype(int)})
    for j, name in enumerate(data.features):
        df[name] = data.X[:, j]
    return df


def _reordered(lines: list, how: str, *, key, seed: int = 1) -> str:
    """``lines`` shuffled (``rows``), by query (``queries``: each query's lines kept
    together and in order) or within each query (``docs``: queries kept in place)."""
    rng = np.random.default_rng(seed)
    if how == "rows":
        return "".join(lines[i] for i in rng.permutation(len(lines)))
    groups: dict = {}
    for line in lines:
        groups.setdefault(key(line), []).append(line)
    keys = list(groups)
    if how == "queries":
        return "".join("".join(groups[keys[i]]) for i in rng.permutation(len(keys)))
    return "".join("".join(groups[k][i] for i in rng.permutation(len(groups[k])))
                   for k in keys)


def _same_set(a, b):
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.relevance, b.relevance)
    np.testing.assert_array_equal(a.qid, b.qid)
    assert list(a.query_ids) == list(b.query_ids)
    assert (a.doc_ids is None) == (b.doc_ids is None)
    if a.doc_ids is not None:
        assert list(a.doc_ids) == list(b.doc_ids)


def _assert_same_study(res, ref):
    got, want = res.to_dict(), ref.to_dict()
    # the headline: its difference, interval and verdict
    assert got["verdict"] == want["verdict"]
    assert got["comparisons"] == want["comparisons"]
    # the per-learner figures, the (runs x queries) tables behind them and everything
    # else, bit for bit (but the time taken)
    assert got["learners"] == want["learners"]
    for name, table in ref.per_query.items():
        for metric, M in table.items():
            np.testing.assert_array_equal(res.per_query[name][metric], M)
    got.pop("seconds"), want.pop("seconds")
    assert got == want


@pytest.mark.parametrize("how", ["rows", "queries", "docs"])
@pytest.mark.parametrize("ids", ["text", "integer"])
def test_a_shuffled_table_gives_the_same_study_bit_for_bit(tmp_path, ids, how):
    df = _table(ids)
    orig = tmp_path / "labels.csv"
    df.to_csv(orig, index=False)
    shuf = tmp_path / "labels_shuffled.csv"
    head, *rows = orig.read_text().splitlines(keepends=True)
    shuf.write_text(head + _reordered(rows, how, key=lambda row: row.split(",", 1)[0]))
    assert sorted(shuf.read_text().splitlines()) == sorted(orig.read_text().splitlines())
    assert shuf.read_text() != orig.read_text()
    _assert_same_study(_study(shuf), _study(orig))
    _same_set(read_labels(shuf), read_labels(orig))


@pytest.mark.parametrize("how", ["rows", "queries", "docs"])
def test_a_shuffled_letor_file_gives_the_same_study_bit_for_bit(tmp_path, how):
    """LETOR without doc ids: a query's documents are put in order of their grade and
    feature values (identical rows are interchangeable)."""
    data = linear_set(queries=40, docs=8, seed=11)
    X = data.X.copy()
    X[::5, 0] = 0.0   # sparse lines: the svmlight parser's path
    y = data.relevance.copy()
    X[3], y[3] = X[2], y[2]  # two identical rows in a query
    data = type(data)(X=X, relevance=y, qid=data.qid, query_ids=data.query_ids,
                      features=data.features)
    text = letor_text(data)
    orig = tmp_path / "train.txt"
    orig.write_text(text)
    shuf = tmp_path / "train_shuffled.txt"
    shuf.write_text(_reordered(text.splitlines(keepends=True), how,
                               key=lambda line: line.split()[1]))
    assert shuf.read_text() != text
    _assert_same_study(_study(shuf), _study(orig))
    _same_set(read_labels(shuf), read_labels(orig))


def test_a_shuffled_dense_letor_file_reads_to_the_same_set(tmp_path):
    """Every line lists features 1..P (MSLR): the compiled reader's path."""
    rng = np.random.default_rng(2)
    lines = [f"{rng.integers(0, 3)} qid:{rng.integers(1, 30)} "
             + " ".join(f"{j + 1}:{v:g}" for j, v in enumerate(rng.integers(0, 3, 4) / 2))
             + "\n" for _ in range(400)]
    orig = tmp_path / "dense.txt"
    orig.write_text("".join(lines))
    shuf = tmp_path / "dense_shuffled.txt"
    shuf.write_text("".join(lines[i] for i in rng.permutation(len(lines))))
    from ulr.study import labels as L
    assert L._read_dense(orig) is not None
    _same_set(read_labels(shuf), read_labels(orig))


def test_a_file_in_canonical_order_keeps_its_row_order(tmp_path):
    # a table: queries by numeric id (2 before 10, though "10" < "2" as text), documents
    # by numeric doc id
    df = pd.DataFrame({"query_id": [2, 2, 2, 10, 10], "doc_id": [9, 10, 100, 3, 20],
                       "relevance": [0, 4, 1, 2, 0], "feature_1": [0.5, -1, 3, 2, 2]})
    p = tmp_path / "labels.csv"
    df.to_csv(p, index=False)
    d = read_labels(p)
    assert list(d.query_ids) == [2, 10] and list(d.qid) == [0, 0, 0, 1, 1]
    assert list(d.doc_ids) == [9, 10, 100, 3, 20]
    assert d.relevance.tolist() == [0, 4, 1, 2, 0]
    assert d.X[:, 0].tolist() == [0.5, -1, 3, 2, 2]
    # text ids: in text order
    df = df.assign(query_id=["a", "a", "a", "b", "b"], doc_id=["x1", "x10", "x2", "y", "z"])
    df.to_csv(p, index=False)
    d = read_labels(p)
    assert list(d.query_ids) == ["a", "b"] and list(d.doc_ids) == list(df["doc_id"])
    assert d.relevance.tolist() == [0, 4, 1, 2, 0]
    # LETOR (no doc ids): queries by numeric qid, a query's rows by the hash of their
    # values (a slow reference below); identical rows stay together
    rows = ["0 qid:3 1:-2 2:1", "0 qid:3 1:-0.5 2:0", "0 qid:3 1:-0.5 2:4", "0 qid:3 1:0 2:0",
            "1 qid:3 1:-7 2:0", "3 qid:3 1:0 2:0", "2 qid:20 1:1 2:1", "2 qid:20 1:1 2:1",
            "4 qid:20 2:5", "1 qid:100 1:1"]
    f = tmp_path / "train.txt"
    f.write_text("\n".join(rows) + "\n")
    d = read_labels(f)
    assert list(d.query_ids) == [3, 20, 100] and list(d.counts) == [6, 3, 1]
    parsed = []
    for line in rows:
        grade, qid, *kv = line.split()
        x = [0.0, 0.0]
        for t in kv:
            k, v = t.split(":")
            x[int(k) - 1] = float(v)
        parsed.append((int(qid[4:]), _slow_hash(float(grade), x), float(grade), x))
    parsed.sort(key=lambda r: (r[0], r[1]))
    assert d.relevance.tolist() == [r[2] for r in parsed]
    assert d.X.tolist() == [r[3] for r in parsed]


_M = (1 << 64) - 1


def _slow_mix(h):
    h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _M
    h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & _M
    return h ^ (h >> 31)


def _slow_hash(grade, x):
    """The row hash of ulr.study.letor_jit.row_hashes, one Python integer at a time:
    splitmix64's finalizer over the float32 bits of the grade, then of each feature."""
    import struct

    def bits(v):
        return struct.unpack("<I", struct.pack("<f", v))[0]
    h = _slow_mix(bits(grade) ^ 0x9E3779B97F4A7C15)
    for v in x:
        h = _slow_mix(h ^ bits(v))
    return h


def test_the_compiled_row_hash_equals_a_slow_reference_and_moves_rows_in_place():
    """Every row's hash equals the Python reference (negative values, -0 and +0 apart);
    rows are moved in place as fancy indexing moves them."""
    from ulr.study.letor_jit import permute_rows, row_hashes
    rng = np.random.default_rng(4)
    n, p = 300, 6
    X = rng.integers(-2, 3, size=(n, p)).astype(np.float32) / 2
    X[:, 4:] = rng.normal(size=(n, 2)).astype(np.float32)
    X[0, 0], X[1, 0] = -0.0, 0.0
    y = rng.integers(0, 3, size=n).astype(np.float32)
    got = row_hashes(X.view(np.int32), y.view(np.int32))
    want = [_slow_hash(float(y[i]), [float(v) for v in X[i]]) for i in range(n)]
    assert got.tolist() == want
    assert len(set(want)) == len({(float(y[i]), X[i].tobytes()) for i in range(n)})
    order = rng.permutation(n)
    Y = X.copy()
    np.testing.assert_array_equal(permute_rows(Y, order), X[order])
