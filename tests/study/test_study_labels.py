"""Reading labelled sets: LETOR / SVMlight text, CSV and Parquet (ulr.study.labels)."""

import numpy as np
import pandas as pd
import pytest

from ulr.errors import UlrError
from ulr.study import labels as L

LETOR = """\
# a comment line before the data
2 qid:10 1:0.5 3:1.25 # docid = a
0 qid:10 2:-1 136:7
4 qid:7 1:1 2:2 3:3   # the second query
1 qid:10 1:0.25
3 qid:7 3:0.5

0 qid:7 2:1e-3 # last
"""


def write(tmp_path, text, name="train.txt"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_letor_groups_by_qid_keeps_grades_and_reads_sparse_features(tmp_path):
    d = L.read_letor(write(tmp_path, LETOR))
    # queries by qid; the interleaved row of qid 10 joins its query; a query's rows in
    # the order of a hash of their values (tests/study/test_study_order.py)
    assert list(d.query_ids) == [7, 10]
    assert list(d.qid) == [0, 0, 0, 1, 1, 1]
    assert list(d.counts) == [3, 3]
    assert d.n_features == 136 and d.features[0] == "feature_1" and d.features[-1] == "feature_136"
    assert d.X.dtype == np.float32
    # a missing index is 0; indices are 1-based; comments are ignored
    rows = np.zeros((6, 136), dtype=np.float32)  # (query 7's rows, then query 10's)
    grades = np.array([4, 3, 0, 2, 0, 1], dtype=np.float32)
    rows[0, [0, 1, 2]] = [1, 2, 3]
    rows[1, 2] = 0.5
    rows[2, 1] = 1e-3
    rows[3, [0, 2]] = [0.5, 1.25]
    rows[4, [1, 135]] = [-1, 7]
    rows[5, 0] = 0.25
    from ulr.study.letor_jit import row_hashes
    h = row_hashes(rows.view(np.int32), grades.view(np.int32))
    order = np.lexsort((h, [0, 0, 0, 1, 1, 1]))
    want = rows[order]
    assert d.relevance.tolist() == grades[order].tolist()
    np.testing.assert_array_equal(d.X, want)


def test_every_grade_from_0_to_4_is_kept(tmp_path):
    text = "".join(f"{g} qid:1 1:{g}\n" for g in range(5))
    d = L.read_letor(write(tmp_path, text))
    assert sorted(d.relevance.tolist()) == [0, 1, 2, 3, 4]
    assert d.X[:, 0].tolist() == d.relevance.tolist()  # each grade with its row


@pytest.mark.parametrize("bad, line, words", [
    ("x qid:1 1:0.1", 3, "is not a LETOR line"),
    ("1 1:0.1 2:3", 3, "is not a LETOR line"),           # no qid
    ("1 qid:1 1:abc", 3, "is not a LETOR line"),         # not a number
    ("1 qid:1 0:1", 3, "feature index 0"),
    ("1 qid:1 2:1 1:3", 3, "out of order"),
    ("-1 qid:1 1:1", 3, "grades must be"),
])
def test_a_malformed_line_is_refused_naming_its_number(tmp_path, bad, line, words):
    text = "2 qid:1 1:0.5 2:1\n# a comment\n" + bad + "\n0 qid:1 1:0\n"
    with pytest.raises(L.MalformedLine) as exc:
        L.read_letor(write(tmp_path, text))
    assert exc.value.line == line
    msg = str(exc.value)
    assert f"Line {line} of train.txt" in msg and words in msg
    assert "\n" not in msg


def test_the_cli_refuses_a_malformed_file_in_one_line_and_writes_nothing(tmp_path, cli):
    bad = write(tmp_path, "2 qid:1 1:0.5\n0 1:3\n", "bad.svm")
    out_dir = tmp_path / "export"
    rc, out, err = cli("study", "--labels", bad, "--export", out_dir, "--json")
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: Line 2 of bad.svm")
    assert not out_dir.exists()


def _table(n_q=4, n_d=3):
    rng = np.random.default_rng(0)
    rows = [dict(query_id=f"q{q}", doc_id=f"d{q}-{d}", relevance=int(rng.integers(0, 5)),
                 feature_a=float(rng.normal()), feature_b=float(rng.normal()))
            for q in range(n_q) for d in range(n_d)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_table_is_read_with_its_ids_and_feature_columns(tmp_path, suffix):
    df = _table()
    p = tmp_path / f"labels{suffix}"
    df.to_csv(p, index=False) if suffix == ".csv" else df.to_parquet(p)
    d = L.read_labels(p)
    assert d.features == ["feature_a", "feature_b"]
    assert list(d.query_ids) == ["q0", "q1", "q2", "q3"]
    assert list(d.doc_ids) == list(df["doc_id"])
    np.testing.assert_allclose(d.X, df[["feature_a", "feature_b"]].to_numpy(), rtol=1e-6)
    assert d.relevance.tolist() == df["relevance"].tolist()


@pytest.mark.parametrize("change, words", [
    (lambda df: df.drop(columns=["relevance"]), "needs the column(s) relevance"),
    (lambda df: df.drop(columns=["feature_a", "feature_b"]), "no feature_* column"),
    (lambda df: df.assign(relevance=["x"] + [1] * (len(df) - 1)), "Row 1 of labels.csv"),
    (lambda df: df.assign(feature_a=[np.nan] + [1.0] * (len(df) - 1)), "no number in feature_a"),
    (lambda df: pd.concat([df, df.iloc[:1]]), "repeats a (query_id, doc_id) pair"),
])
def test_a_bad_table_is_refused_in_one_sentence(tmp_path, change, words):
    p = tmp_path / "labels.csv"
    change(_table()).to_csv(p, index=False)
    with pytest.raises(UlrError, match=None) as exc:
        L.read_labels(p)
    assert words in str(exc.value)


def test_split_queries_is_seeded_and_disjoint():
    rng = np.random.default_rng(1)
    n = 50 * 4
    d = L.LabelledSet(X=rng.normal(size=(n, 2)).astype(np.float32),
                      relevance=rng.integers(0, 5, n).astype(np.float32),
                      qid=np.repeat(np.arange(50), 4), query_ids=np.arange(100, 150),
                      features=["feature_1", "feature_2"])
    tr, te = L.split_queries(d, seed=3)
    tr2, te2 = L.split_queries(d, seed=3)
    assert list(te.query_ids) == list(te2.query_ids)
    assert te.n_queries == 15 and tr.n_queries == 35
    assert not set(tr.query_ids) & set(te.query_ids)
    assert tr.n_documents + te.n_documents == n
    # every row stays with its query
    q = int(te.query_ids[0])
    np.testing.assert_array_equal(te.X[te.qid == 0], d.X[d.qid == q - 100])
    assert list(L.split_queries(d, seed=4)[1].query_ids) != list(te.query_ids)


def test_a_dense_file_reads_as_the_svmlight_parser_reads_it(tmp_path):
    """Files that list features 1..P on every line (MSLR, Istella) take the compiled loop;
    the result is the svmlight parser's, and a malformed line still falls back to it."""
    from sklearn.datasets import load_svmlight_file
    rng = np.random.default_rng(0)
    lines = [f"{rng.integers(0, 5)} qid:{i // 7 + 3} "
             + " ".join(f"{j + 1}:{v:g}" for j, v in enumerate(rng.normal(size=6).round(3)))
             + (" # doc" if i % 3 == 0 else "") for i in range(50)]
    p = write(tmp_path, "\n".join(lines) + "\n")
    assert L._read_dense(p) is not None
    d = L.read_letor(p)
    X, y, q = load_svmlight_file(str(p), query_id=True, dtype=np.float32, zero_based=False)
    X = X.toarray()
    # in the canonical order: by qid, then the hash of the row's values
    from ulr.study.letor_jit import row_hashes
    order = np.lexsort((row_hashes(X.astype(np.float32).view(np.int32),
                                   y.astype(np.float32).view(np.int32)), q))
    np.testing.assert_array_equal(d.X, X[order])
    np.testing.assert_array_equal(d.relevance, y[order])
    assert list(d.query_ids) == sorted(set(q)) and list(d.counts) == [7] * 7 + [1]
    lines[20] = lines[20].replace("3:", "x:")
    bad = write(tmp_path, "\n".join(lines) + "\n", "bad.txt")
    assert L._read_dense(bad) is None
    with pytest.raises(L.MalformedLine, match="Line 21 of bad.txt"):
        L.read_letor(bad)


def test_the_compiled_dense_reader_reads_every_number_as_strtod_does(tmp_path):
    """Exponents, signs, leading zeros, 15 significant digits, tabs, CRLF, blank and
    comment lines, no final newline: bit for bit the svmlight parser's float32 (strtod,
    then one rounding); a value it cannot read exactly sends the file to that parser."""
    from sklearn.datasets import load_svmlight_file
    rng = np.random.default_rng(3)
    forms = ["{:g}", "{:.15g}", "{:e}", "{:.3E}", "{:+.6f}", "{:.0f}", "00{:.4f}", "{:.9e}"]
    lines = ["# header", ""]
    for i in range(300):
        vals = rng.normal(size=5) * 10.0 ** rng.integers(-6, 7, size=5)
        vals[rng.random(5) < 0.2] = 0.0
        feats = []
        for j, v in enumerate(vals):
            f = forms[(i + j) % len(forms)]
            t = f.format(abs(v)) if f.startswith("00") else f.format(v)
            feats.append(f"{j + 1}:{'-' if f.startswith('00') and v < 0 else ''}{t}")
        sep = "\t" if i % 11 == 0 else " "
        line = f"{rng.integers(0, 5)}{sep}qid:{i // 9 + 1}{sep}" + sep.join(feats)
        line += ["", "  ", " # c", "\r"][i % 4]
        lines.append(line)
    text = "\n".join(lines)  # no final newline
    p = tmp_path / "dense.txt"
    p.write_bytes(text.encode())
    got = L._read_dense(p)
    assert got is not None
    y, q, X = got
    Xr, yr, qr = load_svmlight_file(str(p), query_id=True, dtype=np.float64, zero_based=False)
    np.testing.assert_array_equal(X, Xr.toarray().astype(np.float32))
    np.testing.assert_array_equal(y, yr.astype(np.float32))
    np.testing.assert_array_equal(q, qr)
    # more digits than a double holds exactly, nan: the general path decides
    for odd in ("1.234567890123456789", "4.09867605934412e-09", "nan"):
        head, _, tail = lines[5].partition(" 2:")
        bad = lines[:5] + [head + f" 2:{odd} " + tail.split(" ", 1)[1]] + lines[6:]
        f = tmp_path / "odd.txt"
        f.write_text("\n".join(bad) + "\n")
        assert L._read_dense(f) is None
