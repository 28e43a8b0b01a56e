"""Real-shaped example logs for the audit's tests and benchmark, from ulr's generators.

- :func:`recommendation_log`: a recommendation log as e-commerce teams export it
  (:func:`ulr.ope.loggers.make_multi_logger_log`): 3 slots, no query column of its own
  (the query is four binary user features), per-slot propensities, item features, two
  logging policies, a click rate near 0.5% and no session column (the timestamp is
  per impression and not mapped).
- :func:`search_log`: a web-search log (:func:`ulr.simulate.simulate_click_model`, DBN):
  sessions of 10 results, multi-click sessions, Zipf-like query frequencies with a long
  tail, most sessions shown in one of a few production orders per query and a fifth in
  random order (flagged), no propensities, no features; the columns are named as the
  search team named them.

Each writes a CSV and returns ``(path, mapping)``: the :class:`ulr.data.mapping.Mapping` a
user gives at upload, so ``ingest.open_file(path, mapping)`` or
``ingest.load_log(path, name, mapping=mapping)`` reads it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ulr.data.mapping import Mapping


def recommendation_log(path, *, sessions: int = 2000, seed: int = 7) -> tuple[Path, dict]:
    """A two-logger recommendation log without sessions, written to ``path`` (CSV)."""
    from ulr.ope.loggers import make_multi_logger_log
    df, _ = make_multi_logger_log(sessions=sessions, seed=seed)
    df = df.drop(columns=["session_id"]).rename(columns={
        "query_id": "user_segment", "doc_id": "item_id", "position": "slot",
        "click": "clicked", "logger": "policy", "propensity": "propensity_score"})
    df = df.rename(columns={c: c.replace("feature_", "item_emb_") for c in df.columns})
    df.to_csv(path, index=False, float_format="%.6g")
    return Path(path), Mapping(
        columns={"query_id": "user_segment", "doc_id": "item_id", "position": "slot",
                 "click": "clicked", "logger": "policy", "propensity": "propensity_score"},
        features=("item_emb_*",), facts=("per_slot_propensity",))


def search_log(path, *, sessions: int = 3000, queries: int = 300, seed: int = 11,
               randomized_share: float = 0.2) -> tuple[Path, dict]:
    """A web-search log with sessions and no propensities, written to ``path`` (CSV).

    Two draws of the same DBN world (same seed, so the same documents): production
    sessions in one of 3 fixed orders per query, and ``randomized_share`` of them in a
    fresh random order, flagged ``random_order = 1``. Queries are then thinned to
    Zipf-like frequencies (a session of the query of rank r kept with probability
    ``1 / r^0.7``).
    """
    import pandas as pd

    from ulr.simulate import simulate_click_model
    rng = np.random.default_rng(seed)
    keep = 1.0 / (1.0 + rng.permutation(queries)) ** 0.7  # per query: Zipf-like, long tail
    n_rand = int(round(sessions * randomized_share))
    out, offset = [], 0
    for n, orders, flag in ((sessions - n_rand, 3, 0), (n_rand, 0, 1)):
        draw = int(np.ceil(1.2 * max(n, 1) / keep.mean()))
        d = simulate_click_model("dbn", sessions=draw, queries=queries, seed=seed,
                                 orders=orders).df
        first = d.groupby("session_id", sort=True)["query_id"].first()
        kept = first.index[rng.random(len(first)) < keep[first.to_numpy()]][:n]
        d = d[d["session_id"].isin(kept)].copy()
        d["random_order"] = flag
        d["session_id"] = d["session_id"] + offset
        offset = int(d["session_id"].max()) + 1
        out.append(d)
    df = pd.concat(out, ignore_index=True).drop(columns=["true_theta"])
    df = df.rename(columns={"query_id": "QueryID", "doc_id": "URLID", "position": "Rank",
                            "click": "Clicked", "session_id": "SearchID",
                            "random_order": "random_order"})
    df.to_csv(path, index=False)
    return Path(path), Mapping(columns={
        "query_id": "QueryID", "doc_id": "URLID", "position": "Rank", "click": "Clicked",
        "session_id": "SearchID", "randomized": "random_order"})
