"""Dataset facts (ulr.facts): a declared randomization tested against the data, the
PBM's fit kept per dataset version, and the verdicts that read them (issue #50)."""

import json

import numpy as np
import pandas as pd
import pytest

from ulr import facts
from ulr.data import catalog, ingest
from ulr.simulate import simulate_clicks, write_log


def _cli(capsys, *args):
    from ulr.cli import main
    capsys.readouterr()
    rc = main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


# ------------------------------------------------------------------ the test itself, on arrays


def _shuffled_lists(rng, n_lists, docs, shown):
    """Lists of ``shown`` documents drawn from ``docs`` per query, each in random order:
    blocks, (query, document) groups and positions."""
    b, g, p = [], [], []
    for s in range(n_lists):
        q = rng.integers(0, 5)
        chosen = rng.choice(docs, size=shown, replace=False)
        for pos, d in enumerate(rng.permutation(chosen), start=1):
            b.append(s)
            g.append(q * 1000 + d)
            p.append(pos)
    return np.array(b), np.array(g), np.array(p)


def test_the_permutation_test_holds_its_level_on_shuffled_lists():
    """Under a random order the p-value is uniform (a randomization test): over 300 small
    logs the share at or below 0.1 is 0.1 within four binomial standard errors."""
    rng = np.random.default_rng(0)
    ps = []
    for i in range(300):
        b, g, p = _shuffled_lists(rng, n_lists=60, docs=8, shown=3)
        pv, tested = facts.permutation_p(b, g, p, permutations=99, seed=i)
        assert tested > 0
        ps.append(pv)
    share = np.mean(np.array(ps) <= 0.1)
    assert abs(share - 0.1) <= 4 * np.sqrt(0.1 * 0.9 / 300), share


def test_the_permutation_test_finds_a_fixed_order():
    """Lists shown in one fixed order per query (a production ranker) are rejected at the
    floor p-value, and a list of one row or a document seen once tests nothing."""
    rng = np.random.default_rng(1)
    b, g, p = [], [], []
    for s in range(40):
        q = rng.integers(0, 3)
        for pos in range(1, 4):
            b.append(s)
            g.append(q * 10 + pos)  # the same document at the same position every time
            p.append(pos)
    pv, tested = facts.permutation_p(np.array(b), np.array(g), np.array(p), permutations=99)
    assert pv == pytest.approx(1 / 100) and tested == 120
    assert facts.permutation_p([1, 2], [1, 1], [1, 1]) == (None, 0)  # lists of one row
    assert facts.permutation_p([1, 1], [1, 2], [1, 2]) == (None, 0)  # documents seen once


def test_the_p_value_does_not_depend_on_the_rows_order():
    """The same rows in another order (a parallel scan, a file read in place) give the same
    p-value with the same seed. On shuffled lists p sits near the middle, where a
    different draw of the permutations would move it by several hundredths."""
    rng = np.random.default_rng(7)
    b, g, p = _shuffled_lists(rng, n_lists=80, docs=8, shown=4)
    want = facts.permutation_p(b, g, p)
    assert 0.05 < want[0] < 0.95
    for _ in range(5):
        o = rng.permutation(b.size)
        assert facts.permutation_p(b[o], g[o], p[o]) == want
    # ... and a draw that depends on the order would have moved it: the same rows with
    # another seed give another p-value (so the check above can fail)
    assert facts.permutation_p(b, g, p, seed=1)[0] != want[0]


def test_the_statistic_equals_a_slow_reference():
    """The observed statistic (between-document sum of squares of list-centred positions)
    against a loop written here: a permutation that changes nothing keeps p = 1."""
    b = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    g = np.array([5, 6, 7, 5, 6, 7, 5, 6])
    p = np.array([1, 2, 3, 3, 2, 1, 1, 2], dtype=float)
    centred = {}
    for blk in set(b):
        rows = [i for i in range(len(b)) if b[i] == blk]
        m = sum(p[i] for i in rows) / len(rows)
        for i in rows:
            centred[i] = p[i] - m
    ref = 0.0
    for grp in set(g):
        rows = [i for i in range(len(g)) if g[i] == grp]
        ref += sum(centred[i] for i in rows) ** 2 / len(rows)
    # document 7 is seen twice, in lists of 3: every group counts; T is the reference
    total = {}
    for i in range(len(b)):
        total.setdefault(g[i], []).append(centred[i])
    assert ref == pytest.approx(sum(sum(v) ** 2 / len(v) for v in total.values()))
    # p-value of the reference statistic by brute force over every within-list permutation
    import itertools
    lists = [[i for i in range(len(b)) if b[i] == blk] for blk in sorted(set(b))]
    count = n = 0
    for perms in itertools.product(*[list(itertools.permutations(r)) for r in lists]):
        pp = p.copy()
        for rows, perm in zip(lists, perms):
            pp[rows] = p[list(perm)]
        c = np.empty_like(pp)
        for rows in lists:
            c[rows] = pp[rows] - pp[rows].mean()
        t = sum(c[g == grp].sum() ** 2 / (g == grp).sum() for grp in set(g))
        count += t >= ref - 1e-12
        n += 1
    exact = count / n
    pv, _ = facts.permutation_p(b, g, p, permutations=2000, seed=3)
    assert abs(pv - exact) < 4 * np.sqrt(exact * (1 - exact) / 2000) + 1e-3, (pv, exact)


# ------------------------------------------------------------------ on stored logs


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("facts")
    db = tmp / "db.duckdb"
    # a production-ranked log (no randomized session), declared randomized at load
    sim = simulate_clicks(queries=60, positions=6, sessions=3000, seed=2,
                          randomized_fraction=0.0)
    prod = tmp / "prod.csv"
    write_log(sim.df.drop(columns=["randomized"]), str(prod))
    return tmp, db, prod


def test_a_production_log_declared_randomized_is_flagged_everywhere(capsys, store):
    tmp, db, prod = store
    rc, out, err = _cli(capsys, "load", prod, "--db", db, "--name", "prod", "--const",
                        "randomized=1", "--json")
    assert rc == 0, err
    assert [w["code"] for w in json.loads(out)["warnings"]] == ["randomization_contradicted"]
    # randomization: invalid, with the one sentence
    rc, out, err = _cli(capsys, "propensity", "--db", db, "--name", "prod", "--method",
                        "randomization", "--bootstrap", "0", "--json")
    v = json.loads(out)["verdict"]
    assert rc == 0 and v["level"] == "invalid"
    assert "randomization_contradicted" in [r["code"] for r in v["reasons"]]
    # replay relies on a random order too
    rc, out, err = _cli(capsys, "bandit", "--replay", "--db", db, "--name", "prod",
                        "--algorithm", "cascade-klucb", "--max-events", "500", "--json")
    assert rc == 0, err
    assert json.loads(out)["verdict"]["level"] == "invalid"
    # the IPW rankers with theta from randomization; with theta from EM only a caveat
    rc, out, err = _cli(capsys, "rankers", "--db", db, "--name", "prod", "--propensity",
                        "randomization", "--bootstrap", "100", "--json")
    assert rc == 0, err
    assert json.loads(out)["verdict"]["level"] == "invalid"
    # the CTR caption no longer calls the log randomized
    log = catalog.open_dataset("prod", db_path=db)
    from ulr.data.summary import summary_and_ctr
    from ulr.lists import mapping_warnings
    ctr = summary_and_ctr(log, mapping=mapping_warnings(log))[1]
    assert not ctr.verdict.estimate["randomized"]
    assert "randomization_contradicted" in ctr.verdict.codes


def test_treating_every_row_as_randomized_is_checked_too(store):
    """The page's "treat every row as randomized" (assume) on a production log."""
    from ulr import propensity
    tmp, db, prod = store
    ingest.load_log(prod, "prod-plain", db_path=db)
    log = catalog.open_dataset("prod-plain", db_path=db)
    res = propensity.estimate(log, method="randomization", assume_randomized=True)
    assert res.verdict.level == "invalid"
    assert res.verdict.takeaway.startswith("The rows treated as randomized are not randomly")


def test_uniform_random_logs_are_rarely_flagged():
    """Over 20 simulated logs shown entirely in random order, the share flagged is at most
    twice the test's level (at 1%, none of 20). The test of a stored log is this one on its
    rows (lists = sessions, groups = query and document), as the stored path runs it."""
    flagged = 0
    for seed in range(20):
        df = simulate_clicks(queries=30, positions=5, sessions=400, seed=100 + seed,
                             randomized_fraction=1.0).df
        groups = pd.factorize(df["query_id"].astype(str) + "|" + df["doc_id"].astype(str))[0]
        pv, tested = facts.permutation_p(df["session_id"].to_numpy(), groups,
                                         df["position"].to_numpy(), seed=0)
        assert tested > 0
        flagged += pv < facts.RANDOMIZATION_LEVEL
    assert flagged / 20 <= 2 * facts.RANDOMIZATION_LEVEL


def test_facts_are_kept_per_dataset_version(store, monkeypatch):
    tmp, db, prod = store
    ingest.load_log(prod, "kept", db_path=db, replace=True)
    log = catalog.open_dataset("kept", db_path=db)
    first = facts.pbm_fit(log)
    assert first is not None
    from ulr.data import files
    kept = list((files.files_dir(db) / "facts").glob(f"{log.info.content_hash}.pbm-fit.*"))
    assert len(kept) == 1

    def boom(*a, **k):
        raise AssertionError("recomputed a kept fact")
    monkeypatch.setattr("ulr.clickmodels.evaluate.compare", boom)
    assert facts.pbm_fit(catalog.open_dataset("kept", db_path=db)) == first


def test_a_log_without_a_declared_randomization_has_no_check(store):
    tmp, db, prod = store
    ingest.load_log(prod, "none", db_path=db, replace=True)
    assert facts.randomization_check(catalog.open_dataset("none", db_path=db)) is None


def test_a_log_randomized_in_part_is_not_flagged(tmp_path):
    """The bundled sample shape: 10% of sessions randomized, flagged by a column."""
    sim = simulate_clicks(queries=60, positions=6, sessions=3000, seed=5,
                          randomized_fraction=0.1)
    path = tmp_path / "part.csv"
    write_log(sim.df, str(path))
    db = tmp_path / "p.duckdb"
    ingest.load_log(path, "part", db_path=db)
    chk = facts.randomization_check(catalog.open_dataset("part", db_path=db))
    assert chk.declared == "column" and not chk.contradicted
    assert chk.rows == int(pd.read_csv(path)["randomized"].sum())


def test_the_propensity_check_is_a_kept_fact(tmp_path, monkeypatch):
    """Issue 50: the propensity checks are a dataset fact, computed once per version and
    read by every off-policy answer on it."""
    from ulr.data import files
    from ulr.ope.feedback import feedback_from_log
    from ulr.ope.simulate import make_sample_log
    db = tmp_path / "db.duckdb"
    path = tmp_path / "ope.csv"
    df = make_sample_log(rows=2000, ctr=0.02, seed=2)
    df["propensity"] = np.minimum(1.0, df["propensity"] * 40)  # too large for a policy's
    df.to_csv(path, index=False)
    ingest.load_log(path, "ope", db_path=db)
    log = catalog.open_dataset("ope", db_path=db)
    fb, _ = feedback_from_log(log)
    first = dict(fb.notes)["propensity_sum"]
    assert first["fails"]
    kept = list((files.files_dir(db) / "facts").glob(f"{log.info.content_hash}."
                                                     "propensity-check-doc_id-*"))
    assert len(kept) == 1

    def boom(**k):
        raise AssertionError("recomputed a kept fact")
    monkeypatch.setattr("ulr.ope.feedback.propensity_checks", boom)
    again, _ = feedback_from_log(catalog.open_dataset("ope", db_path=db))
    assert dict(again.notes)["propensity_sum"] == first


def test_the_pbm_fit_of_rows_read_in_place_does_not_depend_on_their_order(tmp_path,
                                                                          monkeypatch):
    """Past MAX_TESTED_ROWS a CSV read in place is fitted on a sample of whole sessions
    drawn by a hash of the session id: the same rows shuffled give the same sample and the
    same fit, no session is cut, and the sample is the smallest class of hashes (multiples
    of 2**j) within the cap.
    (The first rows of a shuffled file broke its sessions apart: another fit, and a caveat
    that came and went with the order.)"""
    from ulr.data.scan import csv_scan
    monkeypatch.setattr(facts, "MAX_TESTED_ROWS", 4_000)
    df = simulate_clicks(model="cascade", queries=40, positions=6, sessions=3_000, seed=11,
                         randomized_fraction=0.0).df
    ordered, shuffled = tmp_path / "ordered.csv", tmp_path / "shuffled.csv"
    write_log(df, str(ordered))
    write_log(df.sample(frac=1.0, random_state=3).reset_index(drop=True), str(shuffled))

    def sample(path):
        rows = facts._rows_for_fit(csv_scan(path))
        return rows.execute("SELECT session_id, query_id, doc_id, position, click "
                            "FROM {src}").fetchdf()

    a, b = sample(ordered), sample(shuffled)
    key = ["session_id", "position"]
    pd.testing.assert_frame_equal(a.sort_values(key).reset_index(drop=True),
                                  b.sort_values(key).reset_index(drop=True))
    # whole sessions: each sampled session has all of its rows
    per_log = df.groupby(df["session_id"].astype(str)).size()  # ids are read as text
    per_sample = a.groupby("session_id").size()
    assert (per_sample == per_log.loc[per_sample.index]).all()
    # a slow reference: the sessions whose hash is a multiple of 2**j, for the smallest j
    # that leaves at most the cap's rows
    per = csv_scan(ordered).execute("SELECT session_id, count(*) AS n, "
                                    "any_value(hash(session_id)) AS h FROM {src} "
                                    "GROUP BY session_id").fetchdf()
    h = per["h"].to_numpy(dtype=np.uint64)
    j = 0
    while per["n"][h % np.uint64(2 ** j) == 0].sum() > facts.MAX_TESTED_ROWS:
        j += 1
    assert j > 0
    want = set(per["session_id"][h % np.uint64(2 ** j) == 0])
    assert set(a["session_id"]) == want
    assert facts.MAX_TESTED_ROWS / 4 < len(a) <= facts.MAX_TESTED_ROWS
    fit = facts.pbm_fit(csv_scan(ordered))
    assert fit is not None and fit == facts.pbm_fit(csv_scan(shuffled))
    assert fit.test_sessions > 0
