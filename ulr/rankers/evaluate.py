"""Held-out evaluation of the naive and the IPW ranker with :mod:`ulr.metrics`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ulr import metrics
from ulr import validate
from ulr.errors import TooFewQueries, UlrError, check
from ulr.rankers.clicks import _clicks, _positions, _require, check_theta, ipw_weights
from ulr.rankers.learners import LEARNERS, make_ranker
from ulr.result import Result, cached_property
from ulr.verdict import Verdict, rank_identically

METRICS = ("arp", "dcg", "ndcg@10", "auc", "pauc", "local_auc")
LOWER_IS_BETTER = frozenset({"arp"})
TEST_FRACTION = 0.3
#: bootstrap replicates of the per-query intervals and of the paired verdict,
#: shared by the page and the ``rankers`` command (their verdicts agree)
N_BOOTSTRAP = 1000
# Without relevance labels: binarizing the IPW relevance estimate at 0 marks every
# document ever clicked as relevant, which favours the logging ranker, so the
# AUC family has no click-based estimate here and is reported as missing.
ESTIMATE_UNDEFINED = ("auc", "pauc", "local_auc")


def split_queries(df: pd.DataFrame, *, test_fraction: float = TEST_FRACTION,
                  seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hold out a seeded ``test_fraction`` of the queries (all their rows)."""
    _require(df, ["query_id"], "click log")
    if not 0.0 < float(test_fraction) < 1.0:
        raise UlrError(f"test fraction must be in (0, 1), got {test_fraction}.")
    # ids as text, sorted: the split depends on the seed, not on row order or dtype
    key = df["query_id"].astype(str)
    queries = np.sort(key.unique().astype(object).astype(str))
    if queries.size < 2:
        raise TooFewQueries("Holding out test queries needs at least two queries.")
    n_test = min(max(1, int(round(test_fraction * queries.size))), queries.size - 1)
    rng = np.random.default_rng(seed)
    test_q = queries[rng.permutation(queries.size)[:n_test]]
    in_test = key.isin(test_q).to_numpy()
    return df[~in_test], df[in_test]


def held_out_documents(df: pd.DataFrame, theta=None, *, clip: float | None = None
                       ) -> tuple[pd.DataFrame, bool]:
    """One row per (query, document) with the label used for evaluation.

    With a ``relevance`` column the first row's label is used (labels belong to
    the query-document, not the impression); unlabelled documents are left out
    (judged documents only). Without any label, the label is the IPW
    click estimate ``mean(click / theta_k)`` over the document's impressions and
    the second return value is ``True`` (estimated).
    """
    _require(df, ["query_id", "doc_id"], "test log")
    if len(df) == 0:
        raise UlrError("The test log is empty.")
    if "relevance" in df.columns and df["relevance"].notna().any():
        labelled = df[df["relevance"].notna()]
        docs = labelled.drop_duplicates(["query_id", "doc_id"]).copy()
        docs["label"] = pd.to_numeric(docs["relevance"], errors="coerce")
        if docs["label"].isna().any() or (docs["label"] < 0).any():
            raise UlrError("relevance labels must be numbers >= 0.")
        return docs, False
    _require(df, ["position", "click"], "test log without relevance labels")
    w = ipw_weights(_positions(df), theta, clip=clip)
    est = pd.Series(_clicks(df) * w, index=df.index)
    label = est.groupby([df["query_id"], df["doc_id"]], sort=False).mean()
    docs = df.drop_duplicates(["query_id", "doc_id"]).copy()
    docs["label"] = label.reindex(pd.MultiIndex.from_frame(docs[["query_id", "doc_id"]])).to_numpy()
    return docs, True


def evaluate_scores(docs: pd.DataFrame, scores, *, k: int = 10,
                    max_fpr: float = metrics.DEFAULT_MAX_FPR,
                    u: float = metrics.DEFAULT_U) -> dict[str, metrics.MetricResult]:
    """The six metrics of ``scores`` against ``docs['label']`` per query.

    The partial AUC is McClish-standardized (0.5 = random, 1 = perfect), so it
    reads on the same scale as the AUC.
    """
    return metrics.evaluate(docs["label"].to_numpy(), scores, query_ids=docs["query_id"].to_numpy(),
                            k=k, max_fpr=max_fpr, u=u, standardized=True)


@dataclass(frozen=True)
class RankerComparison(Result):
    """Naive and IPW rankers evaluated on the same test queries.

    Attributes
    ----------
    naive, ipw : dict[str, MetricResult]
        Metrics keyed ``arp``, ``dcg``, ``ndcg@10``, ``auc``, ``pauc``,
        ``local_auc`` (a metric undefined on the test set is missing).
    estimated : bool
        True when the labels are IPW click estimates (no relevance column).
    learner : str
    n_train_queries, n_test_queries, n_test_documents : int
    settings : dict
        The options used (clip, normalize, seed, max_fpr, u, ...).
    verdict : Verdict
        Does IPW rank better than naive on nDCG@k: set when the comparison is built,
        from a paired bootstrap of ``n_bootstrap`` replicates seeded by ``settings["seed"]``.
    evidence : dict
        What the verdict rests on (rows, clicks, training and test queries, sessions).
    """

    naive: dict
    ipw: dict
    estimated: bool
    learner: str
    n_train_queries: int
    n_test_queries: int
    n_test_documents: int
    settings: dict = field(default_factory=dict)
    n_train_clicks: int = 0
    n_train_rows: int = 0
    n_train_sessions: int | None = None
    identical_order: bool | None = None  # both rankers order every test list the same way
    #: held-out queries that can be scored (with a click, or a relevant document): the
    #: one count of test queries every verdict, caveat, evidence line and tile states
    n_scored_queries: int | None = None
    #: the paired bootstrap behind :attr:`verdict`: replicates and two-sided level
    n_bootstrap: int = N_BOOTSTRAP
    level: float = 0.95
    #: the mapping's warnings (:func:`ulr.lists.mapping_warnings`) the verdict weighs
    mapping: tuple = ()
    #: the dataset's PBM-misfit caveat (:func:`ulr.facts.pbm_misfit`): the IPW weights
    #: assume the position-based model
    misfit: object = None
    #: the fewest scored test queries a paired comparison needs (0: no floor); below it the
    #: verdict is ``inconclusive`` and says what would settle it
    min_queries: int = 0
    #: clicks in the whole log the comparison was drawn from (for what would settle it)
    n_log_clicks: int | None = None

    @cached_property
    def verdict(self) -> Verdict:
        return self._verdict()

    @cached_property
    def evidence(self) -> dict:
        return self._evidence()

    def tables(self) -> dict:
        table = self.table()
        return {"table": table, "side by side": self.side_by_side(table, self.paired())}

    def to_dict(self) -> dict:
        from ulr.result import jsonable
        return {"learner": self.learner,
                "metrics": jsonable(self.table().to_dict(orient="records")),
                "paired": jsonable(self.paired().to_dict(orient="records")),
                "identical_order": self.identical_order, "settings": jsonable(self.settings),
                "evidence": jsonable(self.evidence), "verdict": self.verdict.to_dict()}

    @property
    def n_compared(self) -> int:
        """The test queries the comparison rests on (:attr:`n_scored_queries`)."""
        return self.n_test_queries if self.n_scored_queries is None else self.n_scored_queries

    def same_scores(self, metric: str) -> bool:
        """True when both rankers score exactly the same ``metric`` on every test query
        where it is defined (every per-query difference is 0)."""
        if metric not in self.naive or metric not in self.ipw:
            return False
        d = (self.ipw[metric].per_query - self.naive[metric].per_query).dropna()
        return bool(len(d)) and bool((d == 0).all())

    @property
    def corrected_label(self) -> str:
        """The corrected ranker's name: "IPW", or "affine-corrected" when it was trained with
        the affine correction of trust bias (``settings["correction"]``)."""
        return "affine-corrected" if self.settings.get("correction") == "affine" else "IPW"

    def _verdict(self):
        """Does IPW rank better than naive? (docs/verdicts.md, "Compare rankers").

        Rests on the paired per-query difference of nDCG@k (IPW - naive), with
        :attr:`n_bootstrap` replicates at :attr:`level`, seeded by the comparison's seed.
        Rankers that order every test list identically cannot differ: ``inconclusive``.
        An interval containing 0: ``inconclusive`` ("cannot be told apart").
        Labels estimated from clicks, fewer than ``MIN_EFFECTIVE_CLICKS`` training
        clicks or fewer than :data:`MIN_TEST_QUERIES` test queries: at most
        ``directional``. A :attr:`mapping` warning that blocks rankers: ``invalid``.
        """
        from ulr import verdict as V
        return V.with_reason(self._judge(), self.misfit)

    def _judge(self):
        """The verdict before the PBM-misfit caveat (:meth:`_verdict`)."""
        from ulr import verdict as V
        from ulr.lists import blocking, stopped_takeaway
        mapping, level = self.mapping, self.level
        reasons = [w.reason() for w in mapping]
        k = self.settings.get("k", 10)
        metric = f"ndcg@{k}"
        lab = self.corrected_label
        basis = f"paired {metric} difference ({lab} - naive)"
        stops = blocking(mapping, "rankers")
        if stops:
            return V.Verdict("invalid", stopped_takeaway(
                stops, "The queries of this log hold single documents, so there is nothing "
                       "to rank; fix the mapping first."), basis, reasons=reasons)
        if self.identical_order:
            return V.Verdict("inconclusive", f"The naive and the {lab} ranker rank "
                             "identically: they order every test list the same way, so no metric can "
                             "differ.", basis, reasons=reasons + [V.Reason(
                                 "rank_identically", "Both rankers order every test list "
                                 "identically.")])
        thin = list(reasons) + self.thin_reasons()
        if self.min_queries and self.n_compared < self.min_queries:
            return self._too_few(basis, thin)
        if self.same_scores(metric):
            n = self.n_compared
            return V.Verdict("inconclusive", f"The naive and the {lab} ranker score the same "
                             f"{metric} on every one of the {n:,} test queries: there is no "
                             "difference to report.", basis, reasons=thin + [V.Reason(
                                 "same_scores", f"Every per-query {metric} difference is 0.")],
                             estimate={"delta": 0.0, "n": n})
        if metric not in self.naive or metric not in self.ipw:
            return V.Verdict("inconclusive", f"{metric} is undefined on these test queries.",
                             basis, reasons=thin)
        t = metrics.paired_test(self.naive[metric], self.ipw[metric],
                                n_bootstrap=self.n_bootstrap, level=level,
                                seed=self.settings.get("seed", 0))
        return V.difference_verdict(t.delta, t.lower, t.upper, a="naive", b=lab,
                                    quantity=metric, basis=basis, n=t.n_queries,
                                    unit="test queries", level=level, thin=tuple(thin))

    def _too_few(self, basis: str, thin: list):
        """Fewer scored test queries than a paired comparison needs: an answer
        (``inconclusive``), with what would settle it for this log: more clicks when the
        held-out queries are many but few have a click, more distinct queries when they
        are few."""
        from ulr import verdict as V
        n, m, need = self.n_compared, self.n_test_queries, int(self.min_queries)
        what = "a click" if self.estimated else "a relevant document"
        take = (f"Too few test queries to compare the rankers: {n:,} of the {m:,} held-out "
                f"queries have {what}, and only those can be scored; a paired comparison "
                f"needs at least {need} to detect even a medium per-query difference (80% "
                "power at the 5% level).")
        if m >= need:  # queries enough: what is missing is what makes them scorable
            clicks = self.n_log_clicks
            in_all = (f" (the log has {clicks:,} clicks in all)" if clicks is not None
                      else "")
            settle = (f"a log with more clicks{in_all}: at least {need} held-out queries "
                      f"need {what}, and {n:,} have one now" if self.estimated else
                      f"relevance labels on more held-out queries: at least {need} need a "
                      f"relevant document, and {n:,} have one now")
        else:
            settle = (f"a log with more distinct queries: {m:,} are held out and at least "
                      f"{need} must have {what}; if the query column merges several queries, "
                      "a query key with more distinct values")
        return V.Verdict("inconclusive", take, basis,
                         reasons=thin, to_settle=settle, estimate={"n": n, "held_out": m, "needed": need})

    def _evidence(self) -> dict:
        """What the comparison rests on, for a report item (one field per count)."""
        out = {"rows": self.n_train_rows, "clicks": self.n_train_clicks,
               "training queries": self.n_train_queries, "test queries": self.n_compared}
        if self.n_train_sessions is not None:
            out["sessions"] = self.n_train_sessions
        return out

    def evidence_line(self) -> str:
        """The evidence in one sentence, with the same counts as :meth:`evidence` and the
        verdict (the test queries are the scored ones, :attr:`n_compared`)."""
        s = (f"trained on {self.n_train_rows:,} impressions with {self.n_train_clicks:,} "
             f"clicks from {self.n_train_queries:,} queries"
             + ("" if self.n_train_sessions is None else f" ({self.n_train_sessions:,} sessions)")
             + f"; evaluated on {self.n_compared:,} test queries")
        unscored = self.n_test_queries - self.n_compared
        if unscored > 0:
            what = "a click" if self.estimated else "a relevant document"
            s += (f" (the held-out queries with {what}; {unscored:,} more held out have none "
                  "and cannot be scored)")
        return s

    def thin_reasons(self) -> list:
        """The rules of thin evidence that cap the verdict at ``directional``: labels
        estimated from clicks, few training clicks, few test queries."""
        from ulr import verdict as V
        thin = []
        if self.estimated:
            thin.append(V.Reason("estimated_labels", "No relevance labels: the test labels are "
                                 "IPW click estimates, which lean on the same theta."))
        if self.n_train_clicks < V.MIN_EFFECTIVE_CLICKS:
            thin.append(V.Reason("few_clicks", f"The rankers learned from {self.n_train_clicks} "
                                 f"clicks (thin below {V.MIN_EFFECTIVE_CLICKS})."))
        if self.n_compared < MIN_TEST_QUERIES:
            thin.append(V.Reason("few_test_queries", f"{self.n_compared:,} test queries "
                                 f"(a paired test needs {MIN_TEST_QUERIES})."))
        return thin

    def metrics(self) -> dict[str, dict[str, float | None]]:
        """``{"naive": {metric: value}, "ipw": {...}}`` (None where undefined)."""
        out = {}
        for name, res in (("naive", self.naive), ("ipw", self.ipw)):
            out[name] = {m: (float(res[m].value) if m in res else None) for m in self._keys()}
        return out

    def _keys(self) -> list[str]:
        k = self.settings.get("k", 10)
        return [f"ndcg@{k}" if m == "ndcg@10" else m for m in METRICS]

    @validate.params(level=validate.level, n_bootstrap=validate.n_bootstrap, seed=validate.seed)
    def table(self, *, n_bootstrap: int = N_BOOTSTRAP, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
        """Tidy table: ranker, metric, value, lower, upper (per-query bootstrap), queries."""
        rows = []
        for name, res in (("naive", self.naive), ("ipw", self.ipw)):
            for m in self._keys():
                if m not in res:
                    continue
                lo, hi = metrics.bootstrap_ci(res[m], n_bootstrap=n_bootstrap, level=level, seed=seed)
                rows.append(dict(ranker=name, metric=m, value=res[m].value, lower=lo, upper=hi,
                                 queries=res[m].n_queries - res[m].n_excluded,
                                 estimated=self.estimated))
        return pd.DataFrame(rows)

    def side_by_side(self, table: pd.DataFrame, paired: pd.DataFrame) -> pd.DataFrame:
        """One row per metric: naive and IPW with their intervals, then the paired
        difference IPW - naive (``delta``, ``delta lower``, ``delta upper``, ``p_value``,
        ``better``); from this comparison's :meth:`table` and :meth:`paired`, which the
        caller computed once."""
        wide = (table.pivot(index="metric", columns="ranker", values=["value", "lower", "upper"])
                .reindex([k for k in self._keys() if k in set(table["metric"])]))
        wide.columns = [f"{r} {v}" if v != "value" else r for v, r in wide.columns]
        out = wide[["naive", "naive lower", "naive upper", "ipw", "ipw lower", "ipw upper"]]
        out = out.join(paired.set_index("metric")[
            ["delta", "lower", "upper", "p_value", "better"]].rename(
            columns={"lower": "delta lower", "upper": "delta upper"}))
        return out.reset_index()

    def caveats(self, paired: pd.DataFrame) -> list[tuple[str, str]]:
        """The caveats every surface states beside the verdict, as ``(kind, sentence)``
        (kind ``"info"`` or ``"warning"``: how a page draws it): metrics on which the two
        rankers score the same on every test query, metrics within noise, labels estimated
        from clicks. Counts are :attr:`n_compared`'s, as in the verdict and the tiles."""
        out = []
        n = self.n_compared
        noise = self.within_noise(paired)
        same = [k for k in noise if self.same_scores(k)]
        noise = [k for k in noise if k not in same]
        if same and not self.identical_order:
            out.append(("info", f"The two rankers score the same {', '.join(same)} on every "
                                f"one of these {n:,} test queries."))
        if noise and not self.identical_order:
            out.append(("warning", f"Within noise: the 95% paired interval of "
                                   f"{self.corrected_label} − naive "
                                   f"includes 0 for {', '.join(noise)}, so these {n:,} test "
                                   "queries cannot tell the two rankers apart on them."))
        if self.estimated:
            out.append(("warning", "This log has no relevance labels: the numbers below are "
                                   "click-based IPW estimates (relevance = P(click | "
                                   "examined)). The AUC family needs labels."))
        return out

    @staticmethod
    def within_noise(paired: pd.DataFrame, metrics=("arp", "ndcg@10", "auc")) -> list[str]:
        """The ``metrics`` whose paired interval of IPW - naive contains 0: on them the
        held-out queries cannot tell the two rankers apart."""
        pt = paired.set_index("metric") if len(paired) else None
        return [k for k in metrics if pt is not None and k in pt.index
                and pt.loc[k, "lower"] <= 0 <= pt.loc[k, "upper"]]

    @validate.params(level=validate.level, n_bootstrap=validate.n_bootstrap, seed=validate.seed)
    def paired(self, *, n_bootstrap: int = N_BOOTSTRAP, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
        """Paired per-query tests IPW vs naive: delta = ipw - naive, CI, p-value, winner."""
        rows = []
        for m in self._keys():
            if m not in self.naive or m not in self.ipw:
                continue
            t = metrics.paired_test(self.naive[m], self.ipw[m], n_bootstrap=n_bootstrap, level=level,
                                    seed=seed)
            if t.delta == 0:
                better = "tie"
            else:
                ipw_better = (t.delta < 0) if m in LOWER_IS_BETTER else (t.delta > 0)
                better = "ipw" if ipw_better else "naive"
            rows.append(dict(metric=m, naive=t.a, ipw=t.b, delta=t.delta, lower=t.lower,
                             upper=t.upper, p_value=t.p_value, queries=t.n_queries,
                             better=better))
        return pd.DataFrame(rows)


def min_test_queries(*, effect: float = 0.5, alpha: float = 0.05, power: float = 0.8) -> int:
    """Fewest held-out queries for a paired comparison that can mean anything.

    The paired test compares per-query differences. To detect a standardized
    per-query effect ``d`` (mean difference / its standard deviation) with
    the given power in a two-sided test at level ``alpha`` it needs about
    ``n = ((z_{1-alpha/2} + z_{power}) / d)^2`` queries (normal
    approximation; Cohen 1988, ch. 2). The defaults (a medium effect, 5%,
    80%) give 32. It is never below the exact sign-flip test's own floor:
    with ``n`` queries its smallest p-value is ``2 / 2^n``.
    """
    from statistics import NormalDist  # not scipy.stats: this runs at import, and
    # scipy.stats takes most of a second to import (every command and page importing
    # ulr.rankers paid it)
    z = NormalDist().inv_cdf
    n = int(np.ceil(((z(1 - alpha / 2) + z(power)) / effect) ** 2))
    floor = int(np.ceil(np.log2(2 / alpha))) + 1  # 2 / 2^n < alpha
    return max(n, floor)


MIN_TEST_QUERIES = min_test_queries()


def _check_test_queries(n_test: int, min_queries: int) -> None:
    if n_test < min_queries:
        raise TooFewQueries("No query would be held out for testing, so the rankers cannot be "
                            "compared; the log needs more distinct queries.")


def scored_queries(docs: pd.DataFrame) -> int:
    """Held-out queries with a positive label (a click, or a relevant document): the only
    ones on which nDCG, ARP and the AUC family are defined."""
    return int((pd.to_numeric(docs["label"], errors="coerce").fillna(0) > 0)
               .groupby(docs["query_id"].to_numpy()).any().sum())


def check_learner(value, *, option: str = "learner") -> str:
    """A learner of :data:`ulr.rankers.learners.LEARNERS` (``linear`` or ``gbdt``)."""
    if not isinstance(value, str) or value not in LEARNERS:
        raise validate.refuse(option, f"learner must be one of {', '.join(LEARNERS)}, "
                                      f"not {value!r}.")
    return value


@validate.params(learner=check_learner, seed=validate.seed,
                 n_bootstrap=validate.n_bootstrap, level=validate.level)
@dataclass(frozen=True)
class RankerSettings:
    """Every option of training the naive and the IPW ranker and comparing them
    (:func:`train_and_evaluate`), checked when built.

    Attributes
    ----------
    learner : ``linear`` or ``gbdt``.
    clip, normalize : IPW weight clipping and SNIPS self-normalization (see the module doc).
    seed : seeds the split and the learners.
    test_fraction : the share of queries held out when no test log is given
        (:func:`split_queries`, which checks it).
    k, max_fpr, u : nDCG cut-off, partial AUC range (reported McClish-standardized) and
        local AUC top fraction (checked by :mod:`ulr.metrics`).
    learner_options : extra options of the learner (e.g. ``loss``, ``alpha``, ``max_iter``).
    min_queries : the fewest held-out queries that can be scored (have a click, or a
        relevant document: :func:`scored_queries`) for a paired comparison; below it the
        verdict is ``inconclusive`` and says what would settle it (thin evidence is an
        answer, not a refusal); a split that holds out no query at all is refused (0: no
        check). The page and the ``rankers`` command pass :data:`MIN_TEST_QUERIES`
        (:func:`min_test_queries`).
    n_bootstrap, level : the verdict's paired bootstrap (replicates, two-sided level).
    """

    learner: str = "linear"
    clip: float | None = None
    normalize: bool = False
    seed: int = 0
    test_fraction: float = TEST_FRACTION
    k: int = 10
    max_fpr: float = metrics.DEFAULT_MAX_FPR
    u: float = metrics.DEFAULT_U
    learner_options: dict | None = None
    min_queries: int = 0
    n_bootstrap: int = N_BOOTSTRAP
    level: float = 0.95


def train_and_evaluate(train_df: pd.DataFrame, test_df: pd.DataFrame | None = None,
                       theta=None, settings: RankerSettings | None = None, *,
                       naive_model=None, mapping=(), misfit=None, should_stop=None,
                       affine=None, **options) -> RankerComparison:
    """Train the naive and the IPW ranker on clicks and evaluate both.

    Parameters
    ----------
    train_df : DataFrame
        Click log (canonical columns: query_id, doc_id, position, click,
        optional session_id, relevance, feature_*).
    test_df : DataFrame, optional
        Evaluation log. Without it a seeded ``test_fraction`` of the queries of
        ``train_df`` is held out (and not trained on).
    theta : array-like
        Propensity per position (``theta[k-1]`` for position ``k``), any scale.
    settings : RankerSettings, optional
        The options (learner, clip, normalize, seed, test fraction, metrics' k, max_fpr
        and u, learner options, min_queries, bootstrap, level), checked when built;
        ``**options`` are the same as keywords, applied on top
        (``train_and_evaluate(df, None, theta, learner="gbdt")``).
    naive_model : fitted ranker, optional
        Reuse an already fitted naive model (the severity sweep trains it once).
    misfit : Reason, optional
        The dataset's PBM-misfit caveat (:func:`ulr.facts.pbm_misfit`), which caps the
        verdict at ``directional``: the IPW weights assume the position-based model.
    mapping
        The mapping's warnings the verdict weighs (:func:`ulr.lists.mapping_warnings` of
        the log); the page, the CLI, the report and the audit pass their own.
    should_stop : callable() -> bool, optional
        Asked before each fit and before the evaluation; True raises
        :class:`ulr.errors.Cancelled` (a fit itself runs to its end).
    affine : (alpha, beta), optional
        Train the corrected ranker with the affine correction of trust bias
        (:meth:`ulr.rankers.learners.BoostedClickRanker.fit`; gbdt only) instead of IPW;
        ``theta`` then only labels clicks when there is no relevance column. The verdict
        names it "affine-corrected"; ``settings["correction"]`` is ``"affine"``.

    Returns
    -------
    RankerComparison
    """
    s = validate.settings_of(RankerSettings, settings, options, caller="train_and_evaluate")
    learner, clip, normalize, seed = s.learner, s.clip, s.normalize, s.seed
    k, max_fpr, u, min_queries = s.k, s.max_fpr, s.u, s.min_queries
    _require(train_df, ["query_id", "doc_id", "position", "click"], "training log")
    if test_df is None:
        train_df, test_df = split_queries(train_df, test_fraction=s.test_fraction, seed=seed)
    _check_test_queries(int(test_df["query_id"].nunique()), 1 if min_queries else 0)
    theta = check_theta(theta, max_position=int(_positions(train_df).max()))
    opts = dict(s.learner_options or {})
    check(should_stop)
    naive = naive_model or make_ranker(learner, seed=seed, **opts).fit(train_df)
    check(should_stop)
    if affine is not None:
        if learner != "gbdt":
            raise UlrError("the affine correction of trust bias is implemented for the gbdt "
                           "learner only.")
        ipw = make_ranker(learner, clip=clip, normalize=normalize, seed=seed, **opts).fit(
            train_df, theta, affine=affine)
    else:
        ipw = make_ranker(learner, clip=clip, normalize=normalize, seed=seed, **opts).fit(
            train_df, theta)
    check(should_stop)
    docs, estimated = held_out_documents(test_df, theta, clip=clip)
    s_naive, s_ipw = naive.score(docs), ipw.score(docs)
    res_naive = evaluate_scores(docs, s_naive, k=k, max_fpr=max_fpr, u=u)
    res_ipw = evaluate_scores(docs, s_ipw, k=k, max_fpr=max_fpr, u=u)
    if estimated:
        for res in (res_naive, res_ipw):
            for m in ESTIMATE_UNDEFINED:
                res.pop(m, None)
    n_scored = scored_queries(docs)
    identical = rank_identically(docs["query_id"].to_numpy(), s_naive, s_ipw)
    # fewer scored test queries than ``min_queries``: an inconclusive answer that says what
    # would settle it (RankerComparison._too_few), not a refusal
    return RankerComparison(
        naive=res_naive, ipw=res_ipw, estimated=estimated, learner=learner,
        n_train_queries=int(train_df["query_id"].nunique()),
        n_test_queries=int(docs["query_id"].nunique()),
        n_test_documents=int(len(docs)),
        n_train_clicks=int(_clicks(train_df).sum()),
        n_train_rows=int(len(train_df)),
        n_train_sessions=(int(train_df["session_id"].nunique())
                          if "session_id" in train_df else None),
        identical_order=identical,
        n_scored_queries=n_scored, n_bootstrap=s.n_bootstrap, level=s.level,
        mapping=tuple(mapping),
        misfit=misfit, min_queries=int(min_queries),
        n_log_clicks=int(_clicks(train_df).sum() + _clicks(test_df).sum()),
        settings=dict(clip=clip, normalize=normalize, seed=seed, k=k, max_fpr=max_fpr, u=u,
                      pauc="mcclish-standardized", theta=[float(t) for t in theta],
                      learner_options=opts,
                      **({"correction": "affine",
                          "alpha": [float(a) for a in affine[0]],
                          "beta": [float(b) for b in affine[1]]} if affine is not None else {})),
    )
