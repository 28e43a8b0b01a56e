"""Naive vs. IPW learning to rank from clicks (Joachims, Swaminathan & Schnabel 2017).

Two learners, each trained twice on the same clicks, once naively and once with
inverse propensity weights (IPW) ``1 / theta_k`` from a position-bias estimate:

``"linear"`` -- a linear pairwise ranker in the style of propensity SVM-Rank.
    Every clicked document is preferred to each non-clicked document shown in
    the same session (or of the same query when the log has no ``session_id``).
    The model ``s(x) = w . x`` (standardized ``feature_*`` columns) minimizes

    .. math::
        \\frac{1}{Z} \\sum_{(c, n)} \\omega_{c}\\, \\ell\\big(w \\cdot (x_c - x_n)\\big)
        + \\frac{\\lambda}{2} \\|w\\|^2

    with the hinge loss (SVM-Rank, solved exactly by liblinear) or the logistic
    loss (RankNet-style, L-BFGS). Naive: ``omega = 1``. IPW: ``omega = 1 /
    theta_{k(c)}`` at the clicked document's position ``k(c)``, optionally with
    ``theta`` clipped from below (``clip``). ``Z`` is the number of pairs (IPS)
    or, with ``normalize=True``, the sum of the weights (SNIPS, Swaminathan &
    Joachims 2015); for one linear objective self-normalization is a constant
    factor, i.e. it ties the regularization to the effective sample size.

``"gbdt"`` -- pointwise gradient boosting (scikit-learn
    ``HistGradientBoostingClassifier``) with IPW sample weights: every shown
    row is a negative with weight 1, every click is also a positive with weight
    ``1 / theta_k`` (1 for naive). The population minimizer of this weighted
    log-loss has odds ``E[click / theta_k | x] = P(click | examined, x)``, a
    position-free relevance score (the IPW pointwise loss of Wang et al. 2016,
    in its positive-weight form); naive training learns ``P(click | x)``,
    which favours whatever the logging ranker put on top. With
    ``normalize=True`` the positive weights are rescaled to sum to the number
    of clicks.

Evaluation uses relevance labels (rows deduplicated to one per query and
document) on a given test log or a seeded held-out 30% of the queries. Without
labels, relevance is estimated from clicks as ``mean(click / theta_k)`` per
query-document (an unbiased IPW estimate of ``P(click | examined)``) and the
result is flagged ``estimated``: ARP and DCG are then consistent (ratio-)IPW
estimates of the metrics with that relevance (Joachims et al. 2017, Sec. 4),
nDCG@k is a plug-in value, and the AUC family is not reported (binarizing the
estimate at 0 would call every clicked document relevant, a position-biased
label).

References
----------
Joachims, Swaminathan, Schnabel. "Unbiased Learning-to-Rank with Biased
Feedback". WSDM 2017.
Wang, Bendersky, Metzler, Najork. "Learning to Rank with Selection Bias in
Personal Search". SIGIR 2016.
Swaminathan, Joachims. "The Self-Normalized Estimator for Counterfactual
Learning". NeurIPS 2015.
Burges et al. "Learning to Rank using Gradient Descent". ICML 2005 (RankNet).

Modules
-------
:mod:`~ulr.rankers.clicks`
    click columns, theta, IPW weights, preference pairs, stored-log adapters.
:mod:`~ulr.rankers.learners`
    the two learners.
:mod:`~ulr.rankers.evaluate`
    held-out split, labels, metrics, :func:`train_and_evaluate`.
:mod:`~ulr.rankers.sweep`
    the severity sweep.
:mod:`~ulr.rankers.significance`
    paired tests (randomization, bootstrap, t), Holm/BH corrections, Tukey's HSD.
:mod:`~ulr.rankers.systems`
    several learners' rankers compared pairwise, the significance table.
:mod:`~ulr.rankers.plots`
    the figures.
"""

# The names below are imported from their module when first used (PEP 562): importing
# every module here pulled pandas, plotly (the figures) and the learners into whatever
# asked for one constant, e.g. the audit's question "are there enough queries to compare
# rankers?" (``MIN_TEST_QUERIES``), about a second of a new process.
_FROM = {
    "clicks": ("MAX_PAIRS", "ClickPairs", "check_theta", "click_pairs", "ipw_weights",
               "log_frame", "propensity_theta", "segment_positions", "weighed_facts"),
    "evaluate": ("ESTIMATE_UNDEFINED", "LOWER_IS_BETTER", "METRICS", "MIN_TEST_QUERIES",
                 "N_BOOTSTRAP", "TEST_FRACTION", "RankerComparison", "RankerSettings",
                 "evaluate_scores",
                 "held_out_documents", "min_test_queries", "split_queries",
                 "train_and_evaluate"),
    "learners": ("LEARNERS", "BoostedClickRanker", "LinearPairwiseRanker", "make_ranker"),
    "plots": ("comparison_figure", "sweep_figure"),
    "significance": ("CORRECTIONS", "TESTS"),
    "systems": ("PAIR_RESAMPLES", "SystemsComparison", "compare_learners", "parse_learners",
                "significance_wide"),
    "sweep": ("SWEEP_CHANGE", "SWEEP_METRIC", "SWEEP_RUNS", "SweepResult", "SweepSettings",
              "propensity_estimator", "severity_sweep", "sweep_summary", "sweep_table"),
}
_MODULE_OF = {name: mod for mod, names in _FROM.items() for name in names}


def __getattr__(name: str):
    """A name of ``__all__`` (or one of the modules above), imported on first use."""
    import importlib
    mod = _MODULE_OF.get(name)
    if mod is None and name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{mod or name}")
    value = module if mod is None else getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_MODULE_OF) | set(_FROM))


__all__ = [
    "weighed_facts",
    "LEARNERS",
    "METRICS",
    "LOWER_IS_BETTER",
    "TEST_FRACTION",
    "MIN_TEST_QUERIES",
    "N_BOOTSTRAP",
    "PAIR_RESAMPLES",
    "ESTIMATE_UNDEFINED",
    "MAX_PAIRS",
    "ClickPairs",
    "LinearPairwiseRanker",
    "BoostedClickRanker",
    "RankerComparison",
    "make_ranker",
    "click_pairs",
    "ipw_weights",
    "check_theta",
    "split_queries",
    "held_out_documents",
    "evaluate_scores",
    "min_test_queries",
    "train_and_evaluate",
    "RankerSettings",
    "severity_sweep",
    "sweep_summary",
    "sweep_table",
    "SWEEP_CHANGE",
    "SWEEP_RUNS",
    "SWEEP_METRIC",
    "SweepResult",
    "SweepSettings",
    "log_frame",
    "propensity_theta",
    "propensity_estimator",
    "comparison_figure",
    "sweep_figure",
    "TESTS",
    "CORRECTIONS",
    "SystemsComparison",
    "compare_learners",
    "parse_learners",
    "significance_wide",
]
