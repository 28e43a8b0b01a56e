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
iterates in numpy. ``n_bootstrap=B`` adds an interval from B
replicates that reweight the aggregated statistics by resampled sessions (the
standard interval on the log scale, :func:`.bootstrap.standard_interval`).
A method that cannot run on a log raises :class:`ulr.errors.UlrError` with the
reason in one sentence.
"""

from __future__ import annotations

import dataclasses
import importlib
import time

from ulr import validate
from ulr.errors import UlrError
from ulr.propensity.registry import REGISTRY, Method
from ulr.propensity.result import PropensityResult


def _lists() -> tuple[tuple, tuple, tuple]:
    return (tuple(REGISTRY), tuple(m for m, spec in REGISTRY.items() if spec.cells_only),
            tuple(m for m, spec in REGISTRY.items() if spec.in_place))


METHODS, CELL_METHODS, IN_PLACE_METHODS = _lists()


def register(name: str, method: Method) -> None:
    """Add an estimator (or replace one): its module and this declaration (its record in
    :mod:`ulr.propensity.registry`) are all it takes.

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


@validate.params(level=validate.level, n_bootstrap=validate.n_bootstrap, seed=validate.seed)
def estimate(log, *, method: str, positions: int | None = None, n_bootstrap: int = 0,
             seed: int = 0, assume_randomized: bool = False, progress=None,
             level: float = 0.95, should_stop=None, mapping=(),
             weigh_facts: bool = True, interval: str | None = None) -> PropensityResult:
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
        Replicates of a bootstrap interval (0: no bootstrap interval).
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
    mapping : tuple of MappingWarning, or a callable returning them
        The log's mapping warnings (:func:`ulr.lists.mapping_warnings`) the verdict weighs;
        a callable is called after the estimate (a file read in place then checks the
        sample its aggregate read: :data:`ulr.data.scan.RIDE`).
    interval : {"information", "bootstrap"}, optional
        How the interval is formed (:data:`ulr.propensity.registry.INTERVALS`); default the
        method's first (:attr:`Method.intervals`): EM's Fisher information, which needs no
        replicate (``n_bootstrap`` then plays no part), the others' bootstrap.
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
    b = n_bootstrap
    kinds = REGISTRY[method].intervals
    if interval is None:
        interval = kinds[0]
    elif interval not in kinds:
        from ulr.propensity.registry import INTERVALS
        raise UlrError(f"{method}'s interval comes from {' or '.join(INTERVALS[k] for k in kinds)}"
                       f", not from {INTERVALS.get(interval, repr(interval))}.")
    extra = {"interval": interval} if len(kinds) > 1 else {}
    from ulr.data.scan import scan_of

    scan = scan_of(log)
    if should_stop is not None:  # long statements are interrupted too
        scan = dataclasses.replace(scan, should_stop=should_stop)
    t0 = time.perf_counter()
    impl = importlib.import_module(REGISTRY[method].module)
    res = impl.run(scan, positions=positions, n_bootstrap=b, seed=int(seed),
                   assume_randomized=bool(assume_randomized), progress=progress,
                   level=float(level), should_stop=should_stop, **extra)
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
    if assume_randomized and not REGISTRY[method].randomized:
        notes += ("assume_randomized (every row treated as randomized) only affects the "
                  "randomization method.",)
    if callable(mapping):  # asked now: after the aggregate, which may have read its sample
        mapping = mapping()
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
    if REGISTRY[method].randomized:
        have = {w.code for w in out}
        out += tuple(w for w in randomization_warnings(log, assume=assume)
                     if w.code not in have)
    return out, facts.pbm_misfit(log, should_stop=should_stop)
