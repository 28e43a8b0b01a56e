"""What every verdict weighs about a dataset, computed once per dataset version and kept.

A verdict must not depend on the order in which a visitor presses buttons, nor on the
surface that shows it. So the facts about a dataset that verdicts weigh beyond the
mapping checks (:mod:`ulr.lists`) are computed here, once per dataset version (its
``content_hash``), stored beside the dataset in the store's files folder, and read by
every page, command, audit and report:

- :func:`randomization_check`: does the log's own data bear out a declared
  randomization? Randomization can be declared by a ``randomized`` column, by the
  constant ``randomized=1`` at load, or for one analysis ("treat every row as
  randomized"). Under a random order, a document's position does not depend on the
  document, so a randomization (permutation) test of "position is independent of the
  document" within each shown list decides (:class:`RandomizationCheck`).
- :func:`pbm_fit`: does the position-based model fit the log as well as the best
  click model? Every position-bias method and the IPW rankers assume it. The
  comparison is the User models page's (held-out log-likelihood per session, bootstrap
  interval of each model's gap); it is computed for every log with sessions, because a
  verdict that weighed it only after a button was pressed would read two ways.

Rows read in place (a CSV, an engine's path, a source) have no dataset version; their
facts are computed for the call and not kept.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

#: the level of the randomization test: a declared randomization is contradicted when
#: its p-value is below it. 1%, not 5%: a flag stops randomization and replay, so a
#: truly random log must rarely be flagged
RANDOMIZATION_LEVEL = 0.01
#: permutations of the test (its smallest p-value is 1 / (PERMUTATIONS + 1))
PERMUTATIONS = 199
#: at most this many randomized rows are tested (whole lists, drawn by a hash of their
#: key); the mapping check before a load reads the same number of rows
MAX_TESTED_ROWS = 50_000
#: the user-model comparison behind :func:`pbm_fit`: the User models page's defaults
PBM_CHECK_FRACTION = 0.2
PBM_CHECK_BOOTSTRAP = 50
#: bump when a fact's definition changes: stored facts of older versions are recomputed
VERSION = 1


# --------------------------------------------------------------------------- storage


def _folder(log) -> Path | None:
    """Where the facts of a stored log are kept (None for rows read in place)."""
    log = _stored(log)
    info = getattr(log, "info", None)
    if info is None or not getattr(info, "content_hash", None):
        return None
    from ulr.data import catalog, files
    try:
        db = catalog.store_of(log.cur)
    except Exception:  # noqa: BLE001 - a connection that is no store's: nothing to keep
        return None
    return files.files_dir(db) / "facts"


def _stored(log):
    """The stored log behind ``log`` (a :class:`ulr.data.log.Log`, or the scan of one);
    rows read in place have none (``log`` itself is returned)."""
    inner = getattr(log, "log", None)
    return inner if not hasattr(log, "info") and hasattr(inner, "info") else log


def _kept(log, kind: str, compute, *, load, dump):
    """``compute()``, or its value kept for this dataset version (``kind`` names it)."""
    folder = _folder(log)
    if folder is None:
        return compute()
    path = folder / f"{_stored(log).info.content_hash}.{kind}.v{VERSION}.json"
    try:
        return load(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    value = compute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
        tmp.write_text(json.dumps(dump(value)))
        os.replace(tmp, path)  # a reader sees the whole file or none
    except OSError:  # a read-only store still answers; it recomputes next time
        pass
    return value


# --------------------------------------------------------------------------- randomization


@dataclass(frozen=True)
class RandomizationCheck:
    """The test of a declared randomization against the log's data.

    Attributes
    ----------
    declared : str
        How it was declared: ``"column"`` (rows flagged ``randomized``), ``"constant"``
        (``randomized=1`` at load) or ``"assumed"`` (for one analysis).
    rows : int
        Rows declared randomized.
    tested_rows : int
        Rows of documents seen at least twice in the tested lists (the rows whose
        positions can show a dependence on the document).
    blocks : str
        What the positions were permuted within: ``"session"`` or ``"query"``.
    p_value : float or None
        Share of :data:`PERMUTATIONS` within-list permutations whose statistic is at
        least the observed one (``(1 + count) / (PERMUTATIONS + 1)``); None when
        nothing could be tested.
    level : float
        The test's level (:data:`RANDOMIZATION_LEVEL`).
    sampled : bool
        Whether the test read a sample of :data:`MAX_TESTED_ROWS` rows.
    """

    declared: str
    rows: int
    tested_rows: int
    blocks: str
    p_value: float | None
    level: float = RANDOMIZATION_LEVEL
    sampled: bool = False

    @property
    def contradicted(self) -> bool:
        """True when the data contradict the declared randomization."""
        return self.p_value is not None and self.p_value < self.level

    def message(self) -> str:
        """One sentence: what was declared, what the data show, and what follows."""
        head = {"column": "The rows flagged randomized do not look randomly ordered",
                "constant": "The log was declared randomized when it was loaded, but its "
                            "rows do not look randomly ordered",
                "assumed": "Every row is treated as randomized, but the rows do not look "
                           "randomly ordered"}[self.declared]
        within = "shown list" if self.blocks == "session" else "query"
        return (f"{head}: within each {within}, the same documents keep the same positions "
                f"far more often than a random order allows (randomization test on "
                f"{self.tested_rows:,} rows, p {_p(self.p_value)}), so estimates that rely "
                "on a random order (randomization, replay, IPW with theta from "
                "randomization) mean nothing here; declare randomized only the rows whose "
                "order was really shuffled.")

    def to_dict(self) -> dict:
        return {**asdict(self), "contradicted": self.contradicted}


def _p(p) -> str:
    """The p-value as the sentence reads it: at its floor (no permutation reached the
    observed statistic), "at most" that floor."""
    floor = 1 / (PERMUTATIONS + 1)
    return f"at most {floor:.3f}" if p <= floor * (1 + 1e-9) else f"= {p:.3f}"


def _fetch(log, sql: str, params: dict | None = None) -> dict:
    """``sql`` (rows as ``{src}``) on a stored log or on rows read in place, as numpy."""
    if hasattr(log, "table"):
        return log.cur.execute(sql.replace("{src}", log.table), params or {}).fetchnumpy()
    return log.execute(sql, params or {}).fetchnumpy()


def _has(log, column: str) -> bool:
    return log.info.has(column) if hasattr(log, "info") else log.has(column)


def _declared(log, assume: bool) -> str | None:
    if assume:
        return "assumed"
    if not _has(log, "randomized"):
        return None
    facts = getattr(getattr(_stored(log), "info", None), "facts", None)
    return "constant" if facts is not None and facts.randomized else "column"


def randomization_check(log, *, assume: bool = False, seed: int = 0
                        ) -> RandomizationCheck | None:
    """Test a declared randomization against the data (kept per dataset version).

    Under a uniformly random order of each shown list, the positions of a list's
    documents are a random permutation of its positions, whatever the documents. The
    statistic is the between-document sum of squares of positions centred on their
    list's mean, ``T = sum_g (sum_{i in g} c_i)^2 / n_g`` over (query, document) groups
    ``g`` seen at least twice; its null distribution is drawn by permuting the
    positions within each list (a session; a query when the log has no sessions)
    :data:`PERMUTATIONS` times. A randomization test, so its level holds exactly
    whatever the lists' lengths, the number of documents or the click rate.

    Parameters
    ----------
    log : ulr.data.log.Log or ulr.data.scan.Scan
    assume : bool
        Test every row, as an analysis that treats every row as randomized does.
    seed : int
        Seeds the permutations (and nothing else).

    Returns
    -------
    RandomizationCheck or None
        None when nothing was declared (no ``randomized`` column and not ``assume``).
    """
    declared = _declared(log, assume)
    if declared is None:
        return None
    kind = "randomization-all" if assume else "randomization"
    return _kept(log, kind, lambda: _test(log, declared, assume, seed),
                 load=lambda d: RandomizationCheck(**{k: v for k, v in d.items()
                                                      if k != "contradicted"}),
                 dump=RandomizationCheck.to_dict)


def _test(log, declared: str, assume: bool, seed: int) -> RandomizationCheck:
    where = "true" if assume else "coalesce(randomized, false)"
    block = "session_id" if _has(log, "session_id") else "query_id"
    chk = _test_within(log, declared, where, block, seed)
    if chk.p_value is None and block == "session_id":
        # sessions that do not group lists (one row each: a per-row timestamp) test
        # nothing; the query's rows are the lists then, as in a log without sessions
        chk = _test_within(log, declared, where, "query_id", seed)
    return chk


def _test_within(log, declared: str, where: str, block: str, seed: int) -> RandomizationCheck:
    n = int(_fetch(log, f"SELECT count(*) AS n FROM {{src}} WHERE {where}")["n"][0])
    sampled = n > MAX_TESTED_ROWS
    mod = max(1, math.ceil(n / MAX_TESTED_ROWS))
    res = _fetch(log, f"SELECT dense_rank() OVER (ORDER BY {block}) AS b, "
                      "dense_rank() OVER (ORDER BY query_id, doc_id) AS g, "
                      f"CAST(position AS DOUBLE) AS p FROM {{src}} WHERE {where} "
                      f"AND hash({block}) % $ulr_mod = 0", {"ulr_mod": mod})
    b = np.asarray(res["b"], dtype=np.int64)
    g = np.asarray(res["g"], dtype=np.int64)
    p = np.asarray(res["p"], dtype=float)
    p_value, tested = permutation_p(b, g, p, permutations=PERMUTATIONS, seed=seed)
    return RandomizationCheck(declared=declared, rows=n, tested_rows=tested,
                              blocks="session" if block == "session_id" else "query",
                              p_value=p_value, sampled=sampled)


def permutation_p(blocks, groups, positions, *, permutations: int = PERMUTATIONS,
                  seed: int = 0) -> tuple[float | None, int]:
    """The randomization test of :func:`randomization_check` on arrays.

    ``blocks`` (the list of each row), ``groups`` (its (query, document)) and
    ``positions``. Returns ``(p_value, tested_rows)``; the p-value is None when no
    group of two or more rows lies in a list of two or more rows. The rows' order does
    not matter: the same rows and seed give the same p-value in any order.
    """
    b = np.asarray(blocks)
    g = np.asarray(groups)
    p = np.asarray(positions, dtype=float)
    if b.size == 0:
        return None, 0
    # one canonical row order (list, document, position) before any permutation is drawn:
    # rows arrive in whatever order the engine returns them (a parallel scan, a file
    # read in place), and the same seed must give the same p-value on the same rows
    order = np.lexsort((p, g, b))
    b, g, p = b[order], g[order], p[order]
    _, b_idx, b_n = np.unique(b, return_inverse=True, return_counts=True)
    c = p - (np.bincount(b_idx, weights=p) / b_n)[b_idx]  # centred within the list
    _, g_idx, g_n = np.unique(g, return_inverse=True, return_counts=True)
    keep = (g_n[g_idx] >= 2) & (b_n[b_idx] >= 2)
    tested = int(keep.sum())
    if tested == 0 or not np.any(c[keep] != 0):
        return None, tested
    w = keep.astype(float)
    n_groups = g_n.size

    def stat(cc):
        s = np.bincount(g_idx, weights=cc * w, minlength=n_groups)
        return float(np.sum(s * s / g_n))

    observed = stat(c)
    rng = np.random.default_rng(seed)
    base = b_idx.astype(float)
    at_least = 0
    for _ in range(int(permutations)):
        perm = np.argsort(base + rng.random(base.size), kind="stable")  # within lists
        if stat(c[perm]) >= observed * (1 - 1e-12):
            at_least += 1
    return (1 + at_least) / (permutations + 1), tested


# --------------------------------------------------------------------------- the PBM's fit


@dataclass(frozen=True)
class PbmFit:
    """How the position-based model fits a log with sessions, against the best click
    model (the User models page's comparison, :func:`ulr.clickmodels.evaluate.compare`).

    ``gap`` is the PBM's held-out log-likelihood per session below the best model's,
    ``lower``/``upper`` its bootstrap interval (None when the PBM is best).
    """

    best: str
    gap: float
    lower: float | None
    upper: float | None
    test_sessions: int
    level: float = 0.95

    @property
    def misfit(self) -> bool:
        """The PBM fits worse than the best model beyond noise (its gap's interval
        excludes 0)."""
        from ulr.verdict import told_apart
        from ulr.clickmodels.records import assumed
        return (self.best != assumed() and self.lower is not None and self.upper is not None
                and math.isfinite(self.lower) and math.isfinite(self.upper)
                and told_apart(self.lower, self.upper))

    def reason(self):
        """The ``pbm_misfit`` caveat (:func:`ulr.verdict.pbm_misfit_reason`), or None."""
        if not self.misfit:
            return None
        from ulr.verdict import pbm_misfit_reason
        return pbm_misfit_reason(best=self.best, gap=self.gap, lower=self.lower,
                                 upper=self.upper, test_sessions=self.test_sessions,
                                 level=self.level)

    @classmethod
    def of(cls, comparison) -> "PbmFit | None":
        """The PBM's line of a :class:`ulr.clickmodels.evaluate.Comparison` (None without
        the PBM)."""
        from ulr.clickmodels.records import assumed
        pbm = next((s for s in comparison.scores if s.name == assumed()), None)
        if pbm is None:
            return None
        lo, hi = (None, None) if pbm.gap_interval is None else (
            float(pbm.gap_interval[0]), float(pbm.gap_interval[1]))
        return cls(best=str(comparison.best), gap=float(pbm.gap), lower=lo, upper=hi,
                   test_sessions=int(comparison.test_sessions))


def _rows_for_fit(log):
    """The rows the PBM's fit reads: a stored log's, all of them; rows read in place (a
    CSV, an engine's path or table), all of them up to :data:`MAX_TESTED_ROWS`, beyond
    that whole sessions drawn by a hash of their id (:func:`ulr.data.scan.list_sample`,
    the sample the mapping checks read; a fit on every row would cost more than the
    estimate): the same rows in any order give the same fit."""
    from ulr.data.scan import list_sample, scan_of
    if _folder(log) is not None:
        return scan_of(log)
    return list_sample(scan_of(log), max_rows=MAX_TESTED_ROWS)[0]


def pbm_fit(log, *, should_stop=None) -> PbmFit | None:
    """The PBM's fit on a log with sessions (kept per dataset version; rows read in place:
    on a sample of their sessions, :func:`_rows_for_fit`); None without sessions, or when
    the click models cannot read its sessions."""
    if not _has(log, "session_id") or getattr(log, "cells", None) is not None:
        return None

    def compute():
        from ulr.clickmodels import DEFAULT, evaluate, sessions
        from ulr.errors import Cancelled, UlrError
        try:
            S = sessions.collect(_rows_for_fit(log), test_fraction=PBM_CHECK_FRACTION,
                                 seed=0)
            comp = evaluate.compare(S, list(DEFAULT), n_bootstrap=PBM_CHECK_BOOTSTRAP,
                                    seed=0, test_fraction=PBM_CHECK_FRACTION,
                                    refit_intervals=False, should_stop=should_stop)
        except Cancelled:
            raise
        except UlrError:  # sessions the click models cannot read: nothing to weigh
            return None
        return PbmFit.of(comp)

    return _kept(log, "pbm-fit", compute,
                 load=lambda d: None if d is None else PbmFit(**d),
                 dump=lambda v: None if v is None else asdict(v))


def pbm_misfit(log, *, should_stop=None):
    """The ``pbm_misfit`` :class:`ulr.verdict.Reason` of a log, or None."""
    fit = pbm_fit(log, should_stop=should_stop)
    return None if fit is None else fit.reason()


# --------------------------------------------------------------------------- propensities


def propensity_check(log, *, action: str, per_slot: bool, compute) -> dict:
    """The mean-weight check of a log's propensities (:func:`ulr.ope.checks.propensity_checks`,
    run by ``compute()`` on the rows :func:`ulr.ope.feedback.feedback_from_log` reads),
    kept per dataset version, ``action`` (``"doc_id"`` or ``"position"``) and whether the
    propensities are declared per slot (``per_slot``), so every
    off-policy verdict on that dataset reads the same check without recomputing it."""
    kind = f"propensity-check-{action}-{'slot' if per_slot else 'list'}"
    return _kept(log, kind, compute, load=dict,
                 dump=lambda d: {k: (v.item() if hasattr(v, "item") else v)
                                 for k, v in d.items()})
