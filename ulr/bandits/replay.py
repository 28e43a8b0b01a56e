"""Replay (rejection-sampling) evaluation of a bandit policy on a randomized log.

Li, Chu, Langford & Wang, "Unbiased offline evaluation of contextual-bandit-based
news article recommendation algorithms", WSDM 2011.

Every logged *event* is one randomized session (rows sharing ``session_id``
with ``randomized = 1``): its documents are the candidates and the logged list
is their order. Events are visited in a seeded random order. At each event the
policy ranks the candidates; if its top ``k`` equals the logged documents at
positions ``1..k`` the event is *accepted*: the policy is credited with the
logged outcome (a click in the top ``k``) and learns from it with cascade
feedback (the first logged click in the top ``k`` is the click, the items above
it were skipped). Otherwise the event is skipped and the policy does not see it.

When the logged order is a uniformly random permutation of the candidates
(which is what ``randomized = 1`` promises), the logged top ``k`` matches the
policy's choice with probability ``(N - k)! / N!`` whatever the policy does, so
the accepted events are distributed as if the policy had been run online, and
the mean reward over accepted events estimates the policy's click-through rate
(Li et al., Theorem 1). The confidence interval is Wilson's score interval for
a binomial proportion over the accepted events.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields

import numpy as np

from ulr import validate
from ulr.bandits.envs import doc_features
from ulr.bandits.policies import ALGORITHMS, cascade_feedback, make_policy
from ulr import validate
from ulr.errors import NeedsRandomizedRows, NeedsSessions, UlrError
from ulr.stats import wilson_interval
from ulr.result import Result, cached_property
from ulr.verdict import Verdict


@dataclass(frozen=True)
class ReplayResult(Result):
    """Outcome of :func:`replay`.

    Attributes
    ----------
    ctr : float
        Estimated click-through rate of the policy's top ``k`` (NaN when no
        event was accepted).
    ci_lower, ci_upper : float
        Wilson score interval at ``level``.
    accepted : int
        Events where the policy's list matched the logged one.
    events : int
        Usable randomized events visited.
    random_ctr : float
        Click-through rate of the logged (uniformly random) top ``k`` over all
        visited events -- what a random policy achieves.
    no_choice_sessions : int
        Randomized sessions left out because they hold no more than ``k``
        distinct items: every policy shows the logged list there, so they
        cannot tell policies apart (e.g. sessions taken from a per-row
        timestamp hold one item each).
    mapping : tuple
        The log's mapping warnings (:func:`ulr.lists.mapping_warnings`) the verdict weighs.
    verdict, evidence
        Set when the result is built: does the replayed policy beat a random list
        (:meth:`_verdict`), and the sessions and clicks behind it.
    """

    algorithm: str
    k: int
    ctr: float
    ci_lower: float
    ci_upper: float
    accepted: int
    clicks: int
    events: int
    skipped_sessions: int
    random_ctr: float
    items: int
    level: float
    seed: int
    seconds: float
    no_choice_sessions: int = 0
    mapping: tuple = ()

    @property
    def acceptance_rate(self) -> float:
        """Share of the visited events whose logged list the policy matched."""
        return self.accepted / self.events if self.events else float("nan")

    @cached_property
    def verdict(self) -> Verdict:
        return self._verdict()

    @cached_property
    def evidence(self) -> dict:
        return {"sessions": self.events, "clicks": self.clicks}

    def tables(self) -> dict:
        import pandas as pd
        return {"replay": pd.DataFrame([
            {"policy": f"{self.algorithm} (top {self.k})", "ctr": self.ctr,
             "lower": self.ci_lower, "upper": self.ci_upper, "sessions": self.accepted},
            {"policy": "a random list", "ctr": self.random_ctr, "lower": np.nan,
             "upper": np.nan, "sessions": self.events}])}

    def thin(self) -> bool:
        """True when the replayed CTR is as good as unknown: no accepted session, no click,
        or a Wilson interval wider than ±``ulr.verdict.WIDE`` of the estimate (wider than
        the estimate itself)."""
        from ulr import verdict as V
        if not self.accepted or not self.clicks:
            return True
        return (self.ci_upper - self.ci_lower) / 2 > V.WIDE * max(self.ctr, 1e-12)

    def caveats(self) -> list[str]:
        """The sentences shown next to the replay: sessions left out, thin evidence."""
        out = []
        if self.no_choice_sessions:
            out.append(f"{self.no_choice_sessions:,} sessions hold no more than {self.k} "
                       "item(s): every policy would show the logged list there, so they were "
                       "left out.")
        if self.thin():
            out.append(f"Thin evidence: {self.clicks:,} clicks in {self.accepted:,} accepted "
                       f"events; the {self.level:.0%} interval ({self.ci_lower:.2%} – "
                       f"{self.ci_upper:.2%}) is wider than the estimate, so read it as "
                       "unknown.")
        return out

    def _verdict(self):
        """Does the replayed policy beat a random list? (docs/verdicts.md, "Replay").

        The difference of the replayed CTR (over accepted sessions) and the
        random list's CTR (over all visited sessions), normal interval. Fewer
        than ``MIN_EFFECTIVE_CLICKS`` replayed clicks, or a replayed CTR whose interval is
        wider than ±``WIDE`` of it (:meth:`thin`): at most ``directional``. A
        mapping warning that blocks replay (sessions that are not shown lists):
        ``invalid``.
        """
        from ulr import verdict as V
        from ulr.lists import blocking, stopped_takeaway
        mapping = self.mapping
        reasons = [w.reason() for w in mapping]
        basis = "replayed CTR - random-list CTR"
        stops = blocking(mapping, "replay")
        if stops:
            return V.Verdict("invalid", stopped_takeaway(
                stops, "The sessions of this log are not shown lists, so a replay cannot "
                       "match them; fix the session mapping first."), basis, reasons=reasons)
        if not self.accepted:
            return V.Verdict("inconclusive", "No session was accepted: the replay says nothing "
                             "about this policy.", basis, reasons=reasons)
        p, n = self.ctr, self.accepted
        q, m = self.random_ctr, max(self.events, 1)
        se = float(np.sqrt(max(p * (1 - p), 0.25 / n) / n + q * (1 - q) / m))
        z = V.z_value(self.level)
        d = p - q
        thin = list(reasons)
        if self.clicks < V.MIN_EFFECTIVE_CLICKS:
            thin.append(V.Reason("few_clicks", f"The replay rests on {self.clicks} clicks in "
                                 f"{n:,} accepted sessions (thin below "
                                 f"{V.MIN_EFFECTIVE_CLICKS} clicks)."))
        if self.thin():
            thin.append(V.Reason("wide_interval", self.caveats()[-1]))
        v = V.difference_verdict(d, d - z * se, d + z * se, a="a random list",
                                 b=f"{self.algorithm} (top {self.k})",
                                 quantity="click-through rate", basis=basis, n=n,
                                 unit="accepted sessions", level=self.level, pct=True,
                                 thin=tuple(thin))
        ctr = V.fmt_interval(p, self.ci_lower, self.ci_upper, level=self.level, pct=True)
        head = f"Replayed CTR {ctr} from {n:,} accepted sessions. "
        return V.Verdict(v.level, head + v.takeaway, basis, v.reasons, v.to_settle,
                         {**v.estimate, "ctr": p, "ctr_lower": self.ci_lower,
                          "ctr_upper": self.ci_upper, "random_ctr": q})

    def to_dict(self) -> dict:
        plain = {f.name: getattr(self, f.name) for f in fields(self)
                 if f.name != "mapping"}
        return {**plain, "acceptance_rate": self.acceptance_rate,
                "verdict": self.verdict.to_dict()}


def _randomized_sessions(log, k: int, assume_randomized: bool = False):
    """Randomized rows ordered by session and position, as numpy arrays."""
    if not assume_randomized and not log.info.has("randomized"):
        raise NeedsRandomizedRows("Replay evaluation needs a uniformly randomized log, and this log has no "
                       "'randomized' column. Log some traffic with a randomized order (e.g. "
                       "RandTopN) and flag those rows randomized = 1.")
    if not log.info.has("session_id"):
        raise NeedsSessions("Replay evaluation needs a session_id column to tell which rows were "
                       "shown together as one list.")
    res = log.cur.execute(
        f"SELECT session_id::VARCHAR AS s, doc_id::VARCHAR AS d, position AS p, "
        f"click::INT AS c FROM {log.table} WHERE {'true' if assume_randomized else 'randomized'} "
        "ORDER BY s, p").fetchnumpy()
    if len(res["s"]) == 0:
        raise NeedsRandomizedRows("Replay evaluation needs a uniformly randomized log, and no row of this "
                       "log is flagged randomized = 1.")
    sess = np.asarray(res["s"], dtype=object)
    docs = np.asarray(res["d"], dtype=object)
    pos = np.asarray(res["p"], dtype=np.int64)
    clicks = np.asarray(res["c"], dtype=np.int64) > 0
    n = sess.size
    starts = np.flatnonzero(np.r_[True, sess[1:] != sess[:-1]])
    ends = np.r_[starts[1:], n]
    ids, items = np.unique(docs, return_inverse=True)
    # usable: positions 1..k present at the top, no document twice in a session
    ok = (ends - starts) >= k
    for j in range(k):   # loop over list positions
        at = np.minimum(starts + j, n - 1)
        ok &= pos[at] == j + 1
    code = np.repeat(np.arange(starts.size), ends - starts)
    order = np.lexsort((items, code))
    dup = (code[order][1:] == code[order][:-1]) & (items[order][1:] == items[order][:-1])
    ok[np.unique(code[order][1:][dup])] = False
    choice = (ends - starts) > k  # more candidates than slots: the policy has a choice
    no_choice = int((ok & ~choice).sum())
    ok &= choice
    return ids, items, clicks, starts[ok], ends[ok], int((~ok).sum()) - no_choice, no_choice


def _check_options(algorithm: str, k) -> None:
    if algorithm not in ALGORITHMS:
        raise UlrError(f"Unknown algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}.")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= 10:
        raise UlrError(f"The replayed list length k must be between 1 and 10, got {k!r}.")


@validate.retired(k="positions")
@validate.params(level=validate.level, seed=validate.seed)
def replay(log, algorithm: str, *, positions: int = 1, seed: int = 0, level: float = 0.95,
           max_events: int | None = None, assume_randomized: bool | None = None,
           mapping=(), **options) -> ReplayResult:
    """Estimate the click-through rate of ``algorithm`` by replay on ``log``.

    Parameters
    ----------
    log : ulr.data.log.Log
        A click log with ``session_id`` and ``randomized`` columns; only rows
        with ``randomized = 1`` are used.
    algorithm : str
        One of :data:`ulr.bandits.policies.ALGORITHMS`. There is no free first
        observation here (no environment to sample): UCB indices of unseen
        documents are infinite, so every document is tried first.
    positions : int
        Length ``k`` of the evaluated list (1: the top document only). Acceptance
        becomes rarer as ``k`` grows: ``(N - k)! / N!`` for ``N`` candidates.
    seed : int
        Seed of the event order and of the policy's own randomness.
    level : float
        Two-sided confidence level of the Wilson interval.
    max_events : int, optional
        Visit at most this many events.
    assume_randomized : bool, optional
        Treat every row as randomized. Default: what was declared for the log
        when it was loaded (``log.info.facts.randomized``).
    mapping : tuple
        The log's mapping warnings, weighed by the result's verdict.
    options
        Algorithm options (``sigma``, ``c``).

    Raises
    ------
    UlrError
        When the log is not flagged randomized, has no sessions, or no usable
        event.
    """
    k = positions
    _check_options(algorithm, k)
    if assume_randomized is None:
        facts = getattr(log.info, "facts", None)
        assume_randomized = bool(facts and facts.randomized)
    ids, items, clicks, starts, ends, skipped, no_choice = _randomized_sessions(
        log, int(k), bool(assume_randomized))
    if starts.size == 0 and no_choice:
        raise UlrError(f"Every usable randomized session ({no_choice:,}) holds at most k = {k} "
                       "item(s), so any policy would show the logged list and the replay cannot "
                       "tell policies apart; sessions must group the items shown together.")
    if starts.size == 0:
        raise UlrError(f"No randomized session shows positions 1..{k} with distinct documents; "
                       "nothing to replay.")
    tic = time.perf_counter()
    order_ss, policy_ss = np.random.SeedSequence(int(seed)).spawn(2)
    order = np.random.default_rng(order_ss).permutation(starts.size)
    if max_events is not None:
        order = order[: max(1, int(max_events))]
    features = doc_features(log, ids) if algorithm.startswith("cascade-lin") else None
    policy = make_policy(algorithm, n_items=ids.size, positions=int(k), runs=1,
                         seed=np.random.default_rng(policy_ss), features=features, **options)
    accepted = hits = random_hits = 0
    for e in order:                       # logged events are sequential by nature
        s0, s1 = starts[e], ends[e]
        logged = items[s0:s0 + k]
        top_clicked = bool(clicks[s0:s0 + k].any())
        random_hits += top_clicked
        # candidates in a canonical order, so that ties cannot favour the logged list
        chosen = policy.select(accepted + 1, items=np.sort(items[s0:s1]))
        if np.array_equal(chosen[0], logged):
            observed, clicked = cascade_feedback(clicks[None, s0:s0 + k])
            policy.update(chosen, observed, clicked)
            accepted += 1
            hits += top_clicked
    lo, hi = wilson_interval(hits, accepted, level=level)
    return ReplayResult(
        algorithm=algorithm, k=int(k), ctr=hits / accepted if accepted else float("nan"),
        ci_lower=lo, ci_upper=hi, accepted=accepted, clicks=hits, events=int(order.size),
        skipped_sessions=skipped, random_ctr=random_hits / order.size, items=int(ids.size),
        level=level, seed=int(seed), seconds=time.perf_counter() - tic,
        no_choice_sessions=no_choice, mapping=_weighed(log, mapping, bool(assume_randomized)))


def _weighed(log, mapping, assume: bool) -> tuple:
    """The caller's mapping warnings and the dataset's randomization check (kept per dataset
    version, :func:`ulr.lists.randomization_warnings`; with ``assume``, on every row): a
    replay relies on a random order, so the verdict weighs it on every surface."""
    from ulr.lists import randomization_warnings
    out = tuple(mapping)
    have = {w.code for w in out}
    return out + tuple(w for w in randomization_warnings(log, assume=assume)
                       if w.code not in have)
