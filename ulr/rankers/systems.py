"""Several rankers at once: naive and IPW for each learner, every pair on every metric.

:func:`compare_learners` trains the naive and the IPW ranker of each learner on
the same clicks and scores all of them on the same held-out queries (the split
depends only on the seed). :class:`SystemsComparison` then compares every pair
of systems on every metric with a paired test (:mod:`ulr.rankers.significance`),
corrects the p-values for the number of pairs per metric, adds Tukey's HSD when
there are more than two systems, and lays the result out as a significance
table in the style of ranx (Bassani, ECIR 2022): one row per system, one column
per metric, each value with superscript letters naming the systems it beats
after correction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ulr import validate
from ulr.errors import UlrError
from ulr.rankers import significance as S
from ulr.rankers.evaluate import (LOWER_IS_BETTER, N_BOOTSTRAP, RankerComparison,
                                  train_and_evaluate)
from ulr.rankers.learners import LEARNERS
from ulr.text import plain
from ulr.result import Result, cached_property
from ulr.verdict import Verdict, fmt, with_reason

KINDS = ("naive", "ipw")
#: resamples of the pairwise tests of several systems, shared by the page and the CLI
PAIR_RESAMPLES = 10_000
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}


def parse_learners(value) -> tuple[str, ...]:
    """``"linear,gbdt"`` (or a list) as a tuple of distinct known learners."""
    items = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(str(x).strip() for x in items if str(x).strip())
    if not names:
        raise UlrError(f"learners must name at least one of {', '.join(LEARNERS)}.")
    bad = [n for n in names if n not in LEARNERS]
    if bad:
        raise UlrError(f"learners must be among {', '.join(LEARNERS)}, not {bad[0]!r}.")
    if len(set(names)) != len(names):
        raise UlrError(f"learners must name each learner once, got {', '.join(names)}.")
    return names


def compare_learners(train_df, test_df=None, theta=None, settings=None, *,
                     learners=("linear", "gbdt"), test: str = "randomization",
                     correction: str = "holm", n_resamples: int = PAIR_RESAMPLES,
                     should_stop=None, **options) -> "SystemsComparison":
    """:func:`~ulr.rankers.train_and_evaluate` for each learner, on the same split.

    ``settings`` (a :class:`~ulr.rankers.RankerSettings`, its ``learner`` set per learner)
    and ``options`` are those of :func:`~ulr.rankers.train_and_evaluate` (seed, clip,
    normalize, k, min_queries, n_bootstrap, level, mapping, ...). With several
    learners, ``test``, ``correction`` and ``n_resamples`` make the pairwise tests the
    verdict rests on (:meth:`SystemsComparison.pairs`, seeded by ``seed``). Returns a
    :class:`SystemsComparison`.
    """
    comps = {}
    for learner in parse_learners(learners):
        comps[learner] = train_and_evaluate(train_df, test_df, theta, settings,
                                            learner=learner, should_stop=should_stop,
                                            **options)
    level = options.get("level", 0.95 if settings is None else settings.level)
    return SystemsComparison(comps, test=test, correction=correction, n_resamples=n_resamples,
                             level=level,
                             mapping=tuple(options.get("mapping", ())),
                             misfit=options.get("misfit"))


@dataclass(frozen=True)
class SystemsComparison(Result):
    """The naive and IPW rankers of several learners on the same test queries.

    Attributes
    ----------
    comparisons : dict[str, RankerComparison]
        Keyed by learner, in the order given.
    test, correction, n_resamples, level, mapping
        The pairwise tests of several learners' verdict and the mapping warnings it weighs.
    pair_table : DataFrame or None
        With several learners, :meth:`pairs` with those settings (seeded by the first
        comparison's seed), computed once when built; None with one learner.
    verdict : Verdict
        Set when built: with several learners, does IPW beat naive learner by learner
        (:meth:`_verdict`); with one, that learner's :attr:`RankerComparison.verdict`.
    """

    comparisons: dict
    test: str = "randomization"
    correction: str = "holm"
    n_resamples: int = PAIR_RESAMPLES
    level: float = 0.95
    mapping: tuple = ()
    #: the dataset's PBM-misfit caveat (:func:`ulr.facts.pbm_misfit`), if any
    misfit: object = None

    @cached_property
    def pair_table(self) -> pd.DataFrame | None:
        """The pairwise tests of several systems (``None`` for one comparison)."""
        if len(self.comparisons) < 2:
            return None
        return self.pairs(test=self.test, correction=self.correction,
                          n_resamples=self.n_resamples, level=self.level,
                          seed=self.first.settings.get("seed", 0))

    @cached_property
    def verdict(self) -> Verdict:
        pairs = self.pair_table
        return (self.first.verdict if pairs is None
                else with_reason(self._verdict(pairs), self.misfit))

    @property
    def evidence(self) -> dict:
        """The first comparison's evidence (every learner is trained and tested on the
        same queries)."""
        return self.first.evidence

    def tables(self) -> dict:
        out = {"table": self.table()}
        if self.pair_table is not None:
            out["pairs"] = self.pair_table
        return out

    def to_dict(self) -> dict:
        from ulr.result import jsonable
        return {"systems": jsonable(self.table().to_dict(orient="records")),
                "pairs": (None if self.pair_table is None
                          else jsonable(self.pair_table.to_dict(orient="records"))),
                "evidence": jsonable(self.evidence), "verdict": self.verdict.to_dict()}

    @property
    def systems(self) -> dict[str, dict]:
        """``{"naive linear": {metric: MetricResult}, "ipw linear": ..., ...}``."""
        out = {}
        for learner, comp in self.comparisons.items():
            out[f"naive {learner}"] = comp.naive
            out[f"ipw {learner}"] = comp.ipw
        return out

    @property
    def first(self) -> RankerComparison:
        return next(iter(self.comparisons.values()))

    @validate.params(n_bootstrap=validate.n_bootstrap, seed=validate.seed)
    def view(self, *, n_bootstrap: int = N_BOOTSTRAP, seed: int = 0) -> dict:
        """Everything a surface shows of this comparison, computed once here (the page, the
        audit and the report draw it; none recomputes or rewords it): the tables (``table``,
        ``paired``, ``side_by_side`` for one learner; ``pairs``, ``significance`` and
        ``tukey`` for several), the metrics, the evidence, the ``verdict`` and the
        ``caveats`` as ``(kind, sentence)`` (with several learners, the estimated-labels
        one only; the PBM-misfit caveat first, kind ``"note"``: the verdict says it)."""
        comp, multi = self.first, len(self.comparisons) > 1
        table = (self if multi else comp).table(n_bootstrap=n_bootstrap, seed=seed)
        paired = comp.paired(n_bootstrap=n_bootstrap, seed=seed)
        caveats = comp.caveats(paired)
        if multi:
            caveats = [c for c in caveats if c[1].startswith("This log has no relevance")]
        if self.misfit is not None:
            caveats = [("note", self.misfit.message)] + caveats
        return dict(
            multi=multi, metrics=comp.metrics(), table=table, paired=paired,
            noise=comp.within_noise(paired),
            side_by_side=None if multi else comp.side_by_side(table, paired),
            estimated=comp.estimated, evidence=comp.evidence,
            evidence_line=comp.evidence_line(), n_train=comp.n_train_queries,
            n_test=comp.n_compared, same={m: comp.same_scores(m) for m in comp.naive},
            max_fpr=comp.settings["max_fpr"], u=comp.settings["u"],
            identical=comp.identical_order, pairs=self.pair_table,
            significance=(significance_wide(self.significance(self.pair_table))
                          if multi else None),
            tukey=self.tukey() if len(self.systems) > 2 else None,
            verdict=self.verdict, misfit=self.misfit, caveats=caveats)

    def metric_names(self) -> list[str]:
        """The metrics defined for every system, in the standard order."""
        return [m for m in self.first._keys() if all(m in r for r in self.systems.values())]

    def values(self) -> pd.DataFrame:
        """Systems by metrics: each aggregate (the rows are lettered a, b, c, ...)."""
        return pd.DataFrame({m: [float(r[m].value) for r in self.systems.values()]
                             for m in self.metric_names()}, index=list(self.systems))

    @validate.params(level=validate.level, n_bootstrap=validate.n_bootstrap, seed=validate.seed)
    def table(self, *, n_bootstrap: int = N_BOOTSTRAP, level: float = 0.95, seed: int = 0
              ) -> pd.DataFrame:
        """:meth:`RankerComparison.table` of every learner, ``ranker`` naming the system
        (``"naive linear"``, ...): the input of :func:`~ulr.rankers.comparison_figure`."""
        parts = []
        for learner, comp in self.comparisons.items():
            t = comp.table(n_bootstrap=n_bootstrap, level=level, seed=seed)
            parts.append(t.assign(ranker=t["ranker"] + f" {learner}"))
        return pd.concat(parts, ignore_index=True)

    @validate.params(level=validate.level, seed=validate.seed)
    def pairs(self, *, test: str = "randomization", correction: str = "holm",
              n_resamples: int = PAIR_RESAMPLES, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
        """Every pair ``a < b`` (system order) on every metric: ``delta = b - a``.

        Columns: metric, a, b, delta, lower, upper (uncorrected ``level``
        interval), p_value (raw), p_adjusted (``correction`` over the pairs of
        that metric), queries, better (the system the difference favours, or
        "tie"), separated (``p_adjusted < 1 - level`` and the interval excludes 0).
        """
        S._check_choice(correction, S.CORRECTIONS, "correction")
        names, rows = list(self.systems), []
        for m in self.metric_names():
            block = []
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    r = S.paired_difference(self.systems[a][m], self.systems[b][m], test=test,
                                            n_resamples=n_resamples, level=level, seed=seed)
                    block.append(dict(metric=m, a=a, b=b, delta=r.delta, lower=r.lower,
                                      upper=r.upper, p_value=r.p_value, queries=r.n_queries,
                                      better=_better(m, r.delta, a, b)))
            adj = S.adjust([r["p_value"] for r in block], correction)
            for r, p in zip(block, adj):
                r["p_adjusted"] = float(p)
                r["separated"] = bool(p < 1 - level and not r["lower"] <= 0 <= r["upper"])
            rows += block
        cols = ["metric", "a", "b", "delta", "lower", "upper", "p_value", "p_adjusted",
                "queries", "better", "separated"]
        return pd.DataFrame(rows, columns=cols)

    @validate.params(level=validate.level)
    def tukey(self, *, level: float = 0.95, blocked: bool = True) -> pd.DataFrame:
        """Tukey's HSD per metric (:func:`~ulr.rankers.significance.tukey_hsd`) on the
        queries where every system is defined; ``diff = mean_b - mean_a`` of the
        unweighted per-query values (for ARP: the mean per-query ARP)."""
        names, rows = list(self.systems), []
        for m in self.metric_names():
            x = pd.concat([self.systems[s][m].per_query for s in names], axis=1,
                          join="inner").dropna()
            t = S.tukey_hsd(x.to_numpy(), blocked=blocked, level=level)
            for r in t.to_dict("records"):
                a, b = names[r["i"]], names[r["j"]]
                rows.append(dict(metric=m, a=a, b=b, diff=r["diff"], lower=r["lower"],
                                 upper=r["upper"], p_value=r["p_value"], queries=len(x),
                                 better=_better(m, r["diff"], a, b),
                                 separated=bool(r["p_value"] < 1 - level)))
        return pd.DataFrame(rows)

    def significance(self, pairs: pd.DataFrame) -> pd.DataFrame:
        """The significance table (long form) from :meth:`pairs` or :meth:`tukey`.

        One row per system and metric: letter, system, metric, value, se (of
        the per-query mean), beats (letters of the systems it is separated from
        and better than), shown (the value rounded to its standard error with
        the letters as superscripts). :func:`significance_wide` lays it out.
        """
        names = list(self.systems)
        letter = dict(zip(names, S.letters(len(names))))
        won = pairs[pairs["separated"]]
        rows = []
        for s in names:
            for m in self.metric_names():
                res = self.systems[s][m]
                beaten = sorted(letter[r["a"] if r["b"] == s else r["b"]]
                                for r in won[won["metric"] == m].to_dict("records")
                                if r["better"] == s)
                value, se = float(res.value), _se(res)
                rows.append(dict(letter=letter[s], system=s, metric=m, value=value, se=se,
                                 beats="".join(beaten),
                                 shown=fmt(value, se) + "".join(S.SUPERSCRIPTS[c]
                                                                for c in beaten)))
        return pd.DataFrame(rows)

    def _verdict(self, pairs: pd.DataFrame):
        """Does IPW rank better than naive, learner by learner? (docs/verdicts.md).

        Rests on the nDCG@k pairs ``naive L`` vs ``ipw L`` of :meth:`pairs` (with
        :attr:`correction`, at :attr:`level`), whose
        p-values are corrected over all the pairs of the metric: a learner's IPW
        ranker is told apart from its naive one only when the corrected p-value
        is below ``1 - level`` and the interval excludes 0. None told apart:
        ``inconclusive``; all, in the same direction: ``reliable`` (``directional``
        under a rule of thin evidence); a mix: ``directional``.
        """
        from ulr import verdict as V
        from ulr.lists import blocking, stopped_takeaway
        correction, level, mapping = self.correction, self.level, self.mapping
        metric = f"ndcg@{self.first.settings.get('k', 10)}"
        cname = CORRECTION_NAMES[S._check_choice(correction, S.CORRECTIONS, "correction")]
        basis = (f"paired {metric} differences (IPW - naive per learner), "
                 + ("uncorrected" if correction == "none" else f"{cname}-corrected"))
        reasons = [w.reason() for w in mapping]
        stops = blocking(mapping, "rankers")
        if stops:
            return V.Verdict("invalid", stopped_takeaway(
                stops, "The queries of this log hold single documents, so there is nothing "
                       "to rank; fix the mapping first."), basis, reasons=reasons)
        short = [c for c in self.comparisons.values()
                 if c.min_queries and c.n_compared < c.min_queries]
        if short:  # every learner is scored on the same test queries
            return short[0].verdict
        thin = reasons + [r for c in self.comparisons.values() for r in c.thin_reasons()]
        rows = pairs[(pairs["metric"] == metric)].set_index(["a", "b"])
        parts, signs, est, n_learners = [], [], {"level": level}, 0
        p_word = "uncorrected p" if correction == "none" else f"{cname}-corrected p"
        after = "without correction" if correction == "none" else f"after {cname} correction"
        for learner, comp in self.comparisons.items():
            key = (f"naive {learner}", f"ipw {learner}")
            if key not in rows.index:
                continue
            r = rows.loc[key]
            n_learners += 1
            est.update({f"{learner}_{k}": float(r[k])
                        for k in ("delta", "lower", "upper", "p_value", "p_adjusted")})
            phrase, sign = _learner_phrase(learner, comp, r, level, p_word)
            parts.append(phrase)
            if sign is not None:
                signs.append(sign)
        if n_learners == 0:
            return V.Verdict("inconclusive", f"{metric} is undefined on these test queries.",
                             basis, reasons=thin)
        detail = (f"IPW - naive on {metric} ({level:.0%} intervals before correction; "
                  + "; ".join(parts) + ").")
        n_sep = len(signs)
        if n_sep == 0:
            return V.Verdict("inconclusive", "IPW and naive cannot be told apart for any "
                             f"learner {after}: " + detail, basis,
                             reasons=thin, estimate=est)
        if n_sep == n_learners and len(set(signs)) == 1:
            word = "better" if signs[0] else "worse"
            return V.Verdict("directional" if thin else "reliable",
                             f"IPW ranks {'probably ' if thin else ''}{word} than naive for "
                             f"every learner {after}: " + detail, basis,
                             reasons=thin, estimate=est)
        mixed = V.Reason("mixed_learners", "The learners disagree: IPW is told apart from "
                         "naive for some learners and not for others (or in opposite "
                         "directions).")
        return V.Verdict("directional", "IPW's effect depends on the learner: " + detail,
                         basis, reasons=thin + [mixed], estimate=est)


def _learner_phrase(learner: str, comp, r, level: float, p_word: str):
    """``("linear: IPW better, +0.02 [...], Holm-corrected p = 0.01", True)``; the sign is
    True (IPW better), False (worse) or None (not told apart)."""
    from ulr.verdict import fmt_interval
    if comp.identical_order:
        return f"{learner}: rank identically", None
    iv = fmt_interval(r["delta"], r["lower"], r["upper"], level=level, sign=True)
    tail = f"{iv}, {p_word} = {plain(r['p_adjusted'], sig=2)}"
    if not r["separated"]:
        return f"{learner}: cannot be told apart, {tail}", None
    better = r["better"].startswith("ipw")
    return f"{learner}: IPW {'better' if better else 'worse'}, {tail}", better


def _better(metric: str, delta: float, a: str, b: str) -> str:
    if delta == 0 or not np.isfinite(delta):
        return "tie"
    b_better = (delta < 0) if metric in LOWER_IS_BETTER else (delta > 0)
    return b if b_better else a


def _se(res) -> float:
    """Standard error of a metric's aggregate over its defined queries."""
    v = res.per_query.to_numpy(float)
    w = res.weight.to_numpy(float)
    ok = np.isfinite(v) & (w > 0)
    return S.weighted_se(v[ok], w[ok])


def significance_wide(long: pd.DataFrame) -> pd.DataFrame:
    """The significance table as drawn: one row per system (``letter``, ``system``),
    one column per metric holding the value with its superscript letters."""
    wide = long.pivot(index=["letter", "system"], columns="metric", values="shown")
    wide = wide[list(dict.fromkeys(long["metric"]))].reset_index()
    wide.columns.name = None
    return wide
