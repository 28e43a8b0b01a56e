"""The position-bias methods' records: the one home of what each method needs and how it
is shown (issue 53). Nothing elsewhere compares a method's name; it reads the record.

A leaf module (it imports nothing of ulr), so that the result, the precision, the lists'
warnings, the audit and the theme read the records without an import cycle.
:mod:`ulr.propensity` re-exports :class:`Method` and :data:`REGISTRY` and keeps the derived
lists (``METHODS``, ``CELL_METHODS``, ``IN_PLACE_METHODS``) in step with ``register``.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Method:
    """One position-bias estimator and what it needs: the page, the CLI and the source
    path read these declarations (adding an estimator touches its module and
    :data:`REGISTRY`).

    Attributes
    ----------
    module : str
        Implements ``run(scan, *, positions, n_bootstrap, seed, assume_randomized,
        progress, level, should_stop)``; imported on first use (sklearn is slow to import).
    help : str
        One sentence for the page's method picker.
    rows : str or None
        What it needs beyond (query, doc, position) cell statistics, said as "needs ...";
        None when cell statistics are all it reads (a registered source suffices).
    randomized, features, sessions : bool
        Refuses a log without randomized rows (:class:`~ulr.errors.NeedsRandomizedRows`),
        without ``feature_*`` columns (:class:`~ulr.errors.NeedsFeatures`), without a
        ``session_id`` (:class:`~ulr.errors.NeedsSessions`). A ``randomized`` method is the
        one that "treat every row as randomized" affects, whose interval rests on the
        randomized rows' click counts, and whose verdict weighs a contradicted randomization.
    in_place : bool
        Can aggregate a CSV file where it lies (one checked scan, no copy into the store).
    pairs : bool
        Compares a query-document pair across positions, so the position graph
        (:mod:`ulr.propensity.identify`) says which positions it can estimate.
    opens : bool
        A page opens with it when the log supports it (the audit's ``page_methods``).
    trust : bool
        Gives ``alpha`` and ``beta`` per position (the trust-bias model), which the rankers'
        affine debiasing needs.
    unit : str
        What its sample is counted in, for the verdict ("rows", "randomized rows").
    analysis : str
        Its name in the mapping warnings' blocking vocabulary (:data:`ulr.lists.BLOCKS`).
    color : str or None
        Its colour on every chart (None: the palette's next).
    intervals : tuple of str
        How its interval can be formed, the default first (:data:`INTERVALS`): every method
        has the ``"bootstrap"``; EM also the ``"information"`` (its Fisher information, no
        replicates).
    """

    module: str
    help: str
    rows: str | None = None
    randomized: bool = False
    features: bool = False
    sessions: bool = False
    in_place: bool = False
    pairs: bool = False
    opens: bool = False
    trust: bool = False
    unit: str = "rows"
    analysis: str = "propensity"
    color: str | None = None
    intervals: tuple = ("bootstrap",)

    @property
    def cells_only(self) -> bool:
        return self.rows is None


REGISTRY: dict[str, Method] = {
    "randomization": Method(
        "ulr.propensity.randomization",
        "CTR ratios of rows shown in random order (RandTopN), and click ratios of swapped pairs "
        "(RandPair). Needs randomized rows.",
        rows="which rows were shown in random order", randomized=True, opens=True,
        unit="randomized rows", analysis="randomization", color="#0072B2"),
    "em": Method(
        "ulr.propensity.em",
        "EM on the position-based click model over (query, doc, position) counts. Needs "
        "query-doc pairs shown at several positions.", in_place=True, pairs=True, opens=True,
        color="#D55E00", intervals=("information", "bootstrap")),
    "regression-em": Method(
        "ulr.propensity.regression_em",
        "EM whose relevance side is one gradient-boosted model of the features (Wang et al. "
        "2018). Needs feature_* columns; works with pairs seen once.",
        rows="the features of each row", features=True, in_place=True, color="#009E73"),
    "dla": Method(
        "ulr.propensity.dla",
        "Dual Learning Algorithm (Ai et al. 2018): a ranking network and position logits "
        "trained together. Needs features and session_id; sensitive to initialization.",
        rows="the features of each row", features=True, sessions=True, color="#CC79A7"),
    "intervention-harvesting": Method(
        "ulr.propensity.harvesting",
        "Pairs of positions at which different rankers showed the same query-doc pair "
        "(Agarwal et al. 2019). No randomization needed.", in_place=True, pairs=True,
        color="#E69F00"),
    "trust-em": Method(
        "ulr.propensity.trust",
        "EM on the trust-bias model (Agarwal et al. 2019): clicks on irrelevant results near the "
        "top are told from examination. Gives alpha and beta per position; needs query-doc pairs "
        "seen several times.", in_place=True, pairs=True, trust=True),
}

#: how an interval of theta is formed, and its words on every surface
INTERVALS = {
    "information": "the Fisher information",
    "bootstrap": "bootstrap replicates",
}

PLAIN = Method("", "")  # what an unregistered name (a result built by hand) is read as


def spec(name) -> Method:
    """``name``'s record, or the plain defaults when it is not registered (a result built
    by hand, an estimator since unregistered)."""
    return REGISTRY.get(str(name), PLAIN)


def flagged(flag: str) -> tuple[str, ...]:
    """The registered methods whose record sets ``flag``, in registry order."""
    return tuple(m for m, s in REGISTRY.items() if getattr(s, flag))
