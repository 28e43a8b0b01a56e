"""Shared helpers of the click-model tests."""

import numpy as np

from ulr.clickmodels.sessions import SPLIT_SLOTS, Sessions, split_slot_of


def sessions_of(log, *, test_every: int = 0) -> Sessions:
    """Session matrices of a simulated log; every ``test_every``-th session held out."""
    d = log.df if hasattr(log, "df") else log
    test = (d.session_id % test_every == 0) if test_every else np.zeros(len(d), dtype=bool)
    return Sessions.from_rows(d.session_id, d.doc_id, d.position, d.click, test)


def per_session(df, *, test_fraction: float, seed: int) -> Sessions:
    """One row per session, numbered as ``sessions.collect`` numbers them: pairs in (query,
    doc) text order, held out by the md5 slot of ``seed:session_id`` (plain Python)."""
    q, d = df.query_id.astype(str).to_numpy(), df.doc_id.astype(str).to_numpy()
    keys = sorted(set(zip(q, d)))
    index = {k: i for i, k in enumerate(keys)}
    pair = np.array([index[k] for k in zip(q, d)])
    sids = sorted(set(df.session_id.astype(str)))
    s_of = {s: i for i, s in enumerate(sids)}
    s = np.array([s_of[x] for x in df.session_id.astype(str)])
    cut = round(test_fraction * SPLIT_SLOTS)
    held = np.array([split_slot_of(x, seed) < cut for x in sids])
    return Sessions.from_rows(s, pair, df.position.to_numpy(), df.click.to_numpy(), held[s])


def compress(S: Sessions) -> Sessions:
    """The distinct (held-out flag, pairs, clicks) rows of ``S`` with their counts, in the
    order ``sessions.collect`` returns them (numpy's ``unique``, rows sorted)."""
    codes = np.where(S.pair >= 0, 2 * S.pair.astype(np.int64) + S.click, -2)
    key = np.column_stack([S.test.astype(np.int64), codes])
    uniq, counts = np.unique(key, axis=0, return_counts=True)
    x = uniq[:, 1:]
    return Sessions(pair=np.where(x >= 0, x >> 1, -1), click=(x >= 0) & (x & 1 == 1),
                    test=uniq[:, 0] == 1, n_pairs=S.n_pairs, count=counts)


def record_joins(monkeypatch, *, rewrite=lambda sql: sql) -> list:
    """The join key (``hash`` or ``text``) of each pattern statement ``sessions.collect``
    runs from now on, in order; ``rewrite`` edits the statement's text first."""
    from ulr.clickmodels import sessions
    real, keys = sessions._pattern_sql, []

    def recorded(k, where, **kw):
        keys.append(kw["key"])
        return rewrite(real(k, where, **kw))
    monkeypatch.setattr(sessions, "_pattern_sql", recorded)
    return keys


def zipf_weights(n: int, s: float = 1.1) -> np.ndarray:
    """Query frequencies of a web-search log: the r-th most frequent query in 1 / r^s."""
    return 1.0 / np.arange(1, n + 1) ** s


def long_tail_log(model, *, sessions=20000, queries=300, orders=3, seed=1, zipf=1.1):
    """A log from ``model`` whose queries follow Zipf-like frequencies: a few queries shown
    thousands of times, a long tail shown a handful (so most pairs are rarely seen)."""
    from ulr.simulate import simulate_click_model
    return simulate_click_model(model, sessions=sessions, queries=queries, positions=10,
                                seed=seed, orders=orders, session_seed=seed,
                                query_weights=zipf_weights(queries, zipf))
