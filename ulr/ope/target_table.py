"""The target policy over every action: a table of its probabilities, checked against the log.

One row per (context, action): columns ``query_id``, ``doc_id`` (the action, as the
log names it) and ``probability``, from a CSV or Parquet file. It gives the target's
whole distribution over each context's actions, which DM and every DR variant need
(:mod:`ulr.ope.registry`); a column of the logged actions' probabilities does not.

Checks, each refusal one sentence: the three columns exist; every probability is a
number in [0, 1]; a (context, action) appears once; each context's probabilities sum
to 1 within :data:`TOLERANCE`; the log's contexts and the table's are the same (the
missing ones are named, either way).
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import pandas as pd

from ulr.errors import UlrError
from ulr.text import plain
from ulr.ope.feedback import BanditFeedback, Candidates

COLUMNS = ("query_id", "doc_id", "probability")
TOLERANCE = 1e-6
#: how many missing contexts a refusal names
NAMED = 5


def read_target_table(table, *, name: str = "the target table") -> pd.DataFrame:
    """The table from a path, bytes or a file-like (CSV or Parquet, by suffix or content)
    or a DataFrame, with its ids as text and its probabilities as floats (checked)."""
    if isinstance(table, pd.DataFrame):
        df = table.copy()
    else:
        try:
            df = _read(table)
        except UlrError:
            raise
        except Exception as exc:  # a parser's own words are not a sentence for a user
            raise UlrError(f"{name} could not be read as CSV or Parquet "
                           f"({type(exc).__name__}).") from None
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise UlrError(f"{name} needs the columns {', '.join(COLUMNS)}; it lacks "
                       f"{', '.join(missing)}.")
    df = df[list(COLUMNS)].copy()
    if df.empty:
        raise UlrError(f"{name} has no rows.")
    for c in ("query_id", "doc_id"):
        if df[c].isna().any():
            raise UlrError(f"{name} has {int(df[c].isna().sum())} rows without a {c}.")
        df[c] = df[c].map(_text)
    p = pd.to_numeric(df["probability"], errors="coerce")
    bad = int((p.isna() | ~np.isfinite(p) | (p < 0) | (p > 1)).sum())
    if bad:
        raise UlrError(f"{name} has {bad} probabilities that are not numbers in [0, 1].")
    df["probability"] = p.astype(float)
    dup = int(df.duplicated(["query_id", "doc_id"]).sum())
    if dup:
        raise UlrError(f"{name} gives {dup} (query_id, doc_id) pairs more than once.")
    sums = df.groupby("query_id")["probability"].sum()
    off = sums[(sums - 1).abs() > TOLERANCE]
    if len(off):
        raise UlrError(f"the probabilities of {len(off):,} of {name}'s {len(sums):,} contexts "
                       f"do not add up to 1 (within one in a million): {_names(off.index)} (the "
                       f"first sums to {plain(float(off.iloc[0]), sig=7)}).")
    return df


def _text(v) -> str:
    """An id as the log stores it (VARCHAR): integral floats without ``.0``."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _read(table) -> pd.DataFrame:
    if isinstance(table, (str, Path)):
        path = Path(table)
        if not path.exists():
            raise UlrError(f"no target table at {path}.")
        data, suffix = path.read_bytes(), path.suffix.lower()
    else:
        data = table if isinstance(table, bytes) else table.read()
        suffix = Path(getattr(table, "name", "")).suffix.lower()
    if suffix == ".parquet" or data[:4] == b"PAR1":
        return pd.read_parquet(io.BytesIO(data))
    return pd.read_csv(io.BytesIO(data), dtype={"query_id": str, "doc_id": str})


def _names(values) -> str:
    v = [str(x) for x in values]
    more = f" and {len(v) - NAMED:,} more" if len(v) > NAMED else ""
    return ", ".join(v[:NAMED]) + more


def apply_target_table(feedback: BanditFeedback, table: pd.DataFrame
                       ) -> tuple[BanditFeedback, np.ndarray]:
    """The feedback over the union of the log's and the table's (context, action) pairs,
    and the target over them (0 where the table has no row).

    A pair the table adds gets the features of its action elsewhere in the log (their
    mean), or the log's mean features. Refuses, naming them, contexts the log has and
    the table lacks, and the reverse.
    """
    cand = feedback.candidates
    ctx = np.asarray(cand.context_labels).astype(str)
    log_ctx, tab_ctx = set(ctx), set(table["query_id"])
    lacks = sorted(log_ctx - tab_ctx)
    if lacks:
        raise UlrError(f"the target table has no probabilities for {len(lacks):,} of the "
                       f"log's {len(log_ctx):,} contexts: {_names(lacks)}.")
    extra = sorted(tab_ctx - log_ctx)
    if extra:
        raise UlrError(f"the target table has {len(extra):,} contexts the log does not "
                       f"have: {_names(extra)}.")
    act = np.asarray(cand.action_labels).astype(str)
    keys = pd.DataFrame({"query_id": ctx[cand.context], "doc_id": act,
                         "old": np.arange(cand.n_pairs)})
    m = keys.merge(table, on=["query_id", "doc_id"], how="outer")
    order = {c: i for i, c in enumerate(ctx)}
    m["c"] = m["query_id"].map(order).astype(np.int64)
    m = m.sort_values(["c", "doc_id"], kind="stable").reset_index(drop=True)
    X = cand.features
    feats = np.empty((len(m), X.shape[1]))
    old = m["old"].to_numpy()
    have = ~np.isnan(old)
    feats[have] = X[old[have].astype(np.int64)]
    if (~have).any():
        by_act = pd.DataFrame(X).groupby(act).mean()
        fill = by_act.reindex(m.loc[~have, "doc_id"]).to_numpy()
        fill = np.where(np.isnan(fill), X.mean(axis=0) if len(X) else 0.0, fill)
        feats[~have] = fill
    new = Candidates(context=m["c"].to_numpy(), features=feats,
                     context_labels=cand.context_labels,
                     action_labels=m["doc_id"].to_numpy(dtype=object),
                     feature_names=cand.feature_names)
    remap = np.empty(cand.n_pairs, dtype=np.int64)
    remap[old[have].astype(np.int64)] = np.flatnonzero(have)
    fb = dataclasses.replace(feedback, candidates=new, pair=remap[feedback.pair])
    return fb, m["probability"].fillna(0.0).to_numpy(dtype=float)
