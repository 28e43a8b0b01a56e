"""What a log can identify: which positions are linked by documents seen at both.

Bias and relevance separate only where the same (query, document) pair is seen at several
positions: then a difference in its clicks between positions is position bias, not
relevance. Positions form a graph whose edges are such pairs; theta_k / theta_1 is
identified by the pair-based estimators (``em``, ``trust-em``, ``intervention-harvesting``;
and by every click model that gives each pair one attractiveness) exactly for the positions
connected to position 1 (Chen et al., "Identifiability matters: revealing the hidden
recoverable condition in unbiased learning to rank", ICML 2024; Hager et al., ICTIR 2025).
A position linked by only a few pairs is identified in principle, but its theta rests on
those few pairs and on the ranker not having moved them for a reason related to relevance.

``identify(log)`` reads the (query, doc, position) cells every cell method aggregates and
returns an :class:`Identification`: the pairs linking each two positions, the connected
components, which positions are identified, and a verdict naming the cure (randomize the
order of some lists, swap adjacent pairs, or pool logs of several rankers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.propensity.registry import spec
from ulr.result import Result, cached_property
from ulr.verdict import Reason, Verdict

MIN_LINK_PAIRS = 30  # fewer pairs than this tie a position to the rest: a thin link
CURE = ("show a small share of lists in random order, swap adjacent results at random, or "
        "pool logs of several rankers")


@dataclass(frozen=True)
class Identification(Result):
    """Which positions the log links.

    Attributes
    ----------
    positions : int
    links : (K, K) int array
        ``links[i, j]``: pairs seen at both position i + 1 and j + 1 (diagonal: pairs seen at
        the position).
    component : (K,) int array
        The connected component of each position (position 1's is 0).
    identified : (K,) bool array
        Linked to position 1 (theta relative to position 1 is identified there).
    strength : (K,) int array
        Pairs linking each position to any other position of its component.
    pairs, moved : int
        Pairs in the log, and pairs seen at two positions or more.
    """

    positions: int
    links: np.ndarray
    component: np.ndarray
    identified: np.ndarray
    strength: np.ndarray
    pairs: int
    moved: int
    method: str | None = None

    @cached_property
    def verdict(self) -> Verdict:
        return self._verdict()

    @property
    def evidence(self) -> dict:
        """The (query, document) pairs the links rest on."""
        return {"pairs": int(self.pairs), "pairs at several positions": int(self.moved)}

    def tables(self) -> dict:
        import pandas as pd
        return {"positions": pd.DataFrame({
            "position": np.arange(1, self.positions + 1), "group": self.component + 1,
            "identified": [bool(x) for x in self.identified]})}

    def _verdict(self) -> Verdict:
        basis = "the position graph: positions linked by query-document pairs seen at both"
        k = self.positions
        estimate = {"identified": [int(i + 1) for i in np.flatnonzero(self.identified)],
                    "not_identified": [int(i + 1) for i in np.flatnonzero(~self.identified)],
                    "pairs": self.pairs, "moved": self.moved}
        note = (f" This holds for estimators that compare a document across positions; the "
                f"randomization method reads randomized rows instead, and regression-em and "
                f"dla lean on the features."
                if self.method is not None and not spec(self.method).pairs else "")
        if k < 2:
            return Verdict("inconclusive", "With one position there is no position bias to "
                           "identify.", basis, estimate=estimate)
        if self.moved == 0:
            return Verdict(
                "invalid", "No document was seen at two positions, so position bias cannot be "
                f"told from relevance at any position. To fix it, {CURE}." + note, basis,
                reasons=(Reason("no_links", "Every query-document pair was shown at a single "
                                "position."),), to_settle=CURE, estimate=estimate)
        missing = [int(i + 1) for i in np.flatnonzero(~self.identified)]
        thin = [int(i + 1) for i in np.flatnonzero(self.identified)
                if i > 0 and self.strength[i] < MIN_LINK_PAIRS]
        if missing:
            return Verdict(
                "inconclusive", f"θ cannot be identified at position"
                f"{'s' if len(missing) > 1 else ''} {_list(missing)}: no chain of documents "
                f"seen at two positions links {'them' if len(missing) > 1 else 'it'} to "
                f"position 1. To identify {'them' if len(missing) > 1 else 'it'}, {CURE}."
                + note, basis,
                reasons=(Reason("unlinked_positions", f"{_positions(missing)} "
                                f"{'are' if len(missing) > 1 else 'is'} not linked to position "
                                "1."),), to_settle=CURE, estimate=estimate)
        if thin:
            return Verdict(
                "directional", f"Every position is linked to position 1, but position"
                f"{'s' if len(thin) > 1 else ''} {_list(thin)} by fewer than "
                f"{MIN_LINK_PAIRS} documents seen elsewhere, so θ there rests on a few "
                f"documents. To strengthen the links, {CURE}." + note, basis,
                reasons=(Reason("thin_links", f"{_positions(thin)} "
                                f"{'are' if len(thin) > 1 else 'is'} linked by fewer than "
                                f"{MIN_LINK_PAIRS} pairs."),), to_settle=CURE,
                estimate=estimate)
        return Verdict("reliable", f"Every position is linked to position 1 by at least "
                       f"{int(self.strength[1:].min()):,} documents seen at several positions, "
                       "so θ can be identified at every position." + note, basis,
                       estimate=estimate)

    def to_dict(self) -> dict:
        return {"positions": self.positions, "links": self.links.tolist(),
                "component": (self.component + 1).tolist(),
                "identified": [bool(x) for x in self.identified],
                "linking_pairs": self.strength.tolist(), "pairs": self.pairs,
                "pairs_at_several_positions": self.moved, "verdict": self.verdict.to_dict()}


def _positions(xs) -> str:
    return f"Position{'s' if len(xs) > 1 else ''} {_list(xs)}"


def _list(xs) -> str:
    xs = [str(x) for x in xs]
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


def from_cells(pair, position, k: int, *, method: str | None = None) -> Identification:
    """The identification of cells (pair, 1-based position) with at least one impression."""
    from scipy import sparse
    pair = np.asarray(pair, dtype=np.int64)
    pos = np.asarray(position, dtype=np.int64) - 1
    keep = (pos >= 0) & (pos < k)
    pair, pos = pair[keep], pos[keep]
    n_pairs = int(pair.max()) + 1 if pair.size else 0
    m = sparse.csr_matrix((np.ones(pair.size), (pair, pos)), shape=(n_pairs, k))
    m.data[:] = 1.0  # duplicates (a pair at one position in several cells) count once
    links = np.asarray((m.T @ m).todense()).round().astype(np.int64)
    seen = np.asarray(m.sum(axis=1)).ravel()
    moved = int((seen >= 2).sum())
    # components by union-find over the positive off-diagonal links
    parent = list(range(k))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a
    for i in range(k):
        for j in range(i + 1, k):
            if links[i, j] > 0:
                ri, rj = find(i), find(j)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
    roots = [find(i) for i in range(k)]
    order = {r: n for n, r in enumerate(dict.fromkeys(roots))}
    comp = np.array([order[r] for r in roots])
    identified = comp == comp[0]
    # pairs seen at the position and at another position of its component
    strength = np.zeros(k, dtype=np.int64)
    if n_pairs:
        mc = m.tocsc()
        for i in range(k):
            mates = [j for j in range(k) if j != i and comp[j] == comp[i]]
            if not mates:
                continue
            at_i = mc[:, i].toarray().ravel() > 0
            elsewhere = np.asarray(mc[:, mates].sum(axis=1)).ravel() > 0
            strength[i] = int((at_i & elsewhere).sum())
    return Identification(positions=k, links=links, component=comp, identified=identified,
                          strength=strength, pairs=int((seen > 0).sum()), moved=moved,
                          method=method)


def identify(log, *, positions: int | None = None, method: str | None = None) -> Identification:
    """The identification of a log (stored, or any :class:`ulr.data.scan.Scan`), from its
    (query, doc, position) cells."""
    from ulr.data.scan import cell_stats, scan_of
    stats = cell_stats(scan_of(log), positions=positions)
    seen = stats.impressions > 0
    return from_cells(stats.pair[seen], stats.position[seen], stats.positions, method=method)
