"""Position-bias (examination propensity) estimation.

``estimate(log, method=...)`` runs one estimator on a click log and returns a
:class:`PropensityResult` with theta relative to position 1. Methods:

- ``randomization``: CTR ratios of randomized rows (RandTopN) and click ratios
  of swap interventions (RandPair) -- :mod:`.randomization`.
- ``em``: EM on the position-based model over (query, doc, position)
  statistics -- :mod:`.em`.
- ``regression-em``: EM whose M-step fits one gradient-boosted model from the
  features to relevance (Wang et al. 2018) -- :mod:`.regression_em`.
- ``dla``: the Dual Learning Algorithm (Ai et al. 2018) -- :mod:`.dla`.
- ``trust-em``: EM on the trust-bias model, ``alpha`` and ``beta`` per position --
  :mod:`.trust`.
- ``intervention-harvesting``: pairs of positions at which the same
  (query, doc) was shown by different rankers (Agarwal et al. 2019) --
  :mod:`.harvesting`.

Every method aggregates in SQL first (one statement, :mod:`.aggregate`) and
iterates in numpy. ``n_bootstrap=B`` adds a percentile interval from B
replicates that reweight the aggregated statistics by resampled sessions.
A method that cannot run on a log raises :class:`ulr.errors.UlrError` with the
reason in one sentence.
"""

from __future__ import annotations

import dataclasses
import importlib
import time

from ulr import validate
from ulr.errors import UlrError
from ulr.propensity.result import PropensityResult


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
        ``session_id`` (:class:`~ulr.errors.NeedsSessions`).
    in_place : bool
        Can aggregate a CSV file where it lies (one checked scan, no copy into the store).
    """

    module: str
    help: str
    rows: str | None = None
    randomized: bool = False
    features: bool = False
    sessions: bool = False
    in_place: bool = False

    @property
    def cells_only(self) -> bool:
        return self.rows is None


REGISTRY = {
    "randomization": Method(
        "ulr.propensity.randomization",
        "CTR ratios of rows shown in random order (RandTopN), and click ratios of swapped pairs "
        "(RandPair). Needs randomized rows.",
        rows="which rows were shown in random order", randomized=True),
    "em": Method(
        "ulr.propensity.em",
        "EM on the position-based click model over (query, doc, position) counts. Needs "
        "query-doc pairs shown at several positions.", in_place=True),
    "regression-em": Method(
        "ulr.propensity.regression_em",
        "EM whose relevance side is one gradient-boosted model of the features (Wang et al. "
        "2018). Needs feature_* columns; works with pairs seen once.",
        rows="the features of each row", features=True, in_place=True),
    "dla": Method(
        "ulr.propensity.dla",
        "Dual Learning Algorithm (Ai et al. 2018): a ranking network and position logits "
        "trained together. Needs features and session_id; sensitive to initialization.",
        rows="the features of each row", features=True, sessions=True),
    "intervention-harvesting": Method(
        "ulr.propensity.harvesting",
        "Pairs of positions at which different rankers showed the same query-doc pair "
        "(Agarwal et al. 2019). No randomization needed.", in_place=True),
    "trust-em": Method(
        "ulr.propensity.trust",
        "EM on the trust-bias model (Agarwal et al. 2019): clicks on irrelevant results near the "
        "top are told from examination. Gives alpha and beta per position; needs query-doc pairs "
        "seen several times.", in_place=True),
}


def _lists() -> tuple[tuple, tuple, tuple]:
    return (tuple(REGISTRY), tuple(m for m, spec in REGISTRY.items() if spec.cells_only),
            tuple(m for m, spec in REGISTRY.items() if spec.in_place))


METHODS, CELL_METHODS, IN_PLACE_METHODS = _lists()


def register(name: str, method: Method) -> None:
    """Add an estimator (or replace one): its module and this declaration are all it takes.

    The Position bias page, the ``propensity`` and ``rankers`` commands, the severity
    sweep and the source path read :data:`METHODS`, :data:`CELL_METHODS` and
    :data:`IN_PLACE_METHODS`, kept in step here.
    """
    global METHODS, CELL_METHODS, IN_PLACE_METHODS
    if not isinstance(method, Method):
        raise TypeError("register() takes a propensity.Method.")
    REGISTRY[str(name)] = method
    METHODS, CELL_METHODS, IN_PLACE_METHODS = _lists()


def unregister(name: str) -> None:
    """Remove an estimator added by :func:`register`."""
    global METHODS, CELL_METHODS, IN_PLACE_METHODS
    REGISTRY.pop(name, None)
    METHODS, CELL_METHODS, IN_PLACE_METHODS = _lists()
MAX_BOOTSTRAP = validate.MAX_BOOTSTRAP

__all__ = ["CELL_METHODS", "IN_PLACE_METHODS", "METHODS", "REGISTRY", "Method",
           "PropensityResult", "estimate", "register", "unregister"]


def estimate(log, *, method: str, positions: int | None = None, n_bootstrap: int = 0,
             seed: int = 0, assume_randomized: bool = False, progress=None,
             level: float = 0.95, should_stop=None, mapping=(),
             weigh_facts: bool = True) -> PropensityResult:
    """Estimate examination probability per position, relative to position 1.

    Parameters
    ----------
    log : ulr.data.log.Log or ulr.data.scan.Scan
        The click log (a stored dataset, or an in-place CSV scan for the
        methods that only need cell statistics: ``em``,
        ``intervention-harvesting``).
    method : str
        One of :data:`METHODS`.
    positions : int, optional
        Estimate positions 1..K (default: every position in the log).
    n_bootstrap : int
        Replicates for the percentile interval (0: no interval).
    seed : int
        Seed of the bootstrap weights and of the stochastic methods.
    assume_randomized : bool
        ``randomization`` only: treat every row as randomized.
    progress : callable(fraction, text), optional
        Called as the work advances (fraction in [0, 1]).
    level : float
        Two-sided level of the bootstrap interval (default 0.95).
    should_stop : callable() -> bool, optional
        Asked between stages and in every loop (bootstrap replicate, EM
        iteration, GBDT refit, DLA step); when it returns True the work stops
        with :class:`ulr.errors.Cancelled` within one step.
    mapping : tuple of MappingWarning
        The log's mapping warnings (:func:`ulr.lists.mapping_warnings`) the verdict weighs.
    weigh_facts : bool
        Read the dataset's facts (:mod:`ulr.facts`) into the verdict: a contradicted
        randomization, the PBM's fit (default). False only where no verdict is shown and
        theta alone is used (the IPW weights of the rankers, the sweep and the study), so
        that their repeated estimates do not pay for a user-model comparison each.

    Returns
    -------
    PropensityResult
        With the log's click counts per position, so its ``verdict`` judges the
        intervals the chart draws (bootstrap, else from the click counts).
    """
    if method not in REGISTRY:
        raise UlrError(f"unknown propensity method {method!r}; choose one of "
                       f"{', '.join(METHODS)}.")
    b = validate.n_bootstrap(n_bootstrap)
    level = validate.level(level)
    seed = validate.seed(seed)
    from ulr.data.scan import scan_of

    scan = scan_of(log)
    if should_stop is not None:  # long statements are interrupted too
        scan = dataclasses.replace(scan, should_stop=should_stop)
    t0 = time.perf_counter()
    impl = importlib.import_module(REGISTRY[method].module)
    res = impl.run(scan, positions=positions, n_bootstrap=b, seed=int(seed),
                   assume_randomized=bool(assume_randomized), progress=progress,
                   level=float(level), should_stop=should_stop)
    seconds = time.perf_counter() - t0
    counts = {}
    if res.clicks is None:  # what the verdict weighs: the counts behind each position (the
        # cell methods read them off their cells; the others need one more aggregate)
        from ulr.data.summary import ctr_by_position
        by_pos = ctr_by_position(scan)
        counts = {"clicks": by_pos["clicks"].to_numpy(),
                  "impressions": by_pos["impressions"].to_numpy()}
    if progress is not None:
        progress(1.0, f"{method}: done")
    notes = tuple(res.notes)
    if assume_randomized and method != "randomization":
        notes += ("assume_randomized (every row treated as randomized) only affects the "
                  "randomization method.",)
    mapping, misfit = (_facts(log, method, mapping, bool(assume_randomized), should_stop)
                       if weigh_facts else (tuple(mapping), None))
    return res.but(notes=notes, seconds=seconds, **counts, mapping=mapping, misfit=misfit)


def _facts(log, method: str, mapping, assume: bool, should_stop):
    """What the verdict weighs about the dataset beyond the caller's ``mapping``, read from
    its facts (:mod:`ulr.facts`, kept per dataset version), so that every surface
    gives one verdict: a declared randomization that the data contradict (the
    randomization method; with ``assume``, tested on every row) and the PBM's fit (every
    method assumes the position-based model)."""
    from ulr import facts
    from ulr.lists import randomization_warnings
    out = tuple(mapping)
    if method == "randomization":
        have = {w.code for w in out}
        out += tuple(w for w in randomization_warnings(log, assume=assume)
                     if w.code not in have)
    return out, facts.pbm_misfit(log, should_stop=should_stop)
