"""Beta priors on the click models' probabilities, as pseudo-counts in the M-step.

Every probability parameter ``p`` of a click model (attractiveness, satisfaction,
examination, continuation) is estimated from EM's expected counts: ``num`` (expected
successes: clicks, examinations, continuations) over ``den`` (expected trials). With a
Beta prior the M-step adds pseudo-counts,

    p <- (num + A) / (den + A + B),

the posterior mode under Beta(A + 1, B + 1) (Chuklin, Markov & de Rijke, *Click Models for
Web Search*, 2015, §4; PyClick starts every EM parameter's counts at one success in two
trials, ``A = B = 1``). With a prior, a pair seen once and clicked does not get 1, nor a pair seen and
never clicked 0 (which cost ``log(1e-6)`` on held-out sessions), and EM has a fixed point
for never-clicked pairs that no iteration cap decides.

Three settings (:func:`parse`):

- ``"auto"`` (the default) centres the prior on the pooled estimate ``m`` with strength
  ``s`` pseudo-trials: ``A = s m``, ``B = s (1 - m)``. For the per-pair families
  (attractiveness, satisfaction) ``m`` is first the pooled ratio of the counts below (all
  clicks over all results counted as examined; all last clicks over all clicks), held fixed
  until EM converges; then once more the pooled ratio of the model's own expected counts
  at that fit (:meth:`Prior.recentred`), held fixed while EM converges again. A centre
  that followed EM's estimates at every step would leave the PBM's and UBM's free scale
  (``theta alpha = (c theta)(alpha / c)``) unpinned, and EM would crawl along it to the
  iteration cap; a centre left at the counts' ratio (which counts every result of a
  session without clicks as examined) is too low for never-seen pairs. For the per-rank
  families ``m`` is the pooled value of the current expected counts. The per-pair families get
  ``s`` by empirical Bayes from the training sessions alone: the beta-binomial method of
  moments (Kleinman, "Proportions with extraneous variance", JASA 1973) on each pair's
  clicks over the results the book's SDBN counts as examined (down to the session's last
  click; :mod:`ulr.clickmodels.counts`) and its last clicks over its clicks. With ``rho`` the intra-class correlation,
  ``E[sum_i n_i (p_i - m)^2] = m (1 - m) [(G - 1) + rho (N - sum n_i^2 / N - (G - 1))]``
  over G pairs with N trials, and ``s = 1 / rho - 1``, kept in [``MIN_STRENGTH``,
  ``MAX_STRENGTH``]. Per-rank parameters (examination, continuation), estimated from the
  whole log, get ``RANK_STRENGTH`` pseudo-trials: enough to keep a rank without evidence
  at the pooled value, never enough to move one with evidence.
- ``(A, B)``: the same pseudo-counts on every parameter (``1, 1``: PyClick's).
- ``"none"``: plain maximum likelihood, unseen pairs at the pooled ratio.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ulr.errors import UlrError
from ulr.text import plain

INIT = 0.5
MIN_STRENGTH = 1.0
MAX_STRENGTH = 1e6
RANK_STRENGTH = 1.0
PAIR_FAMILIES = ("attractiveness", "satisfaction")
FAMILIES = PAIR_FAMILIES + ("examination", "continuation")


@dataclass(frozen=True)
class Prior:
    """How the M-step turns expected counts into a probability.

    ``kind`` is ``"auto"``, ``"fixed"`` or ``"none"``; ``a``, ``b`` the pseudo-counts of a
    fixed prior; ``strength`` the pseudo-trials per family of an auto prior (filled in by
    :meth:`fitted` from the training sessions).
    """

    kind: str = "auto"
    a: float = 0.0
    b: float = 0.0
    strength: dict = field(default_factory=dict)
    centre: dict = field(default_factory=dict)
    recentre: bool = True  # auto: move the centre to the model's own pooled estimate once

    def __post_init__(self):
        if self.kind not in ("auto", "fixed", "none"):
            raise ValueError(f"unknown prior kind {self.kind!r}")
        if self.kind == "fixed" and not (self.a >= 0 and self.b >= 0 and self.a + self.b > 0):
            raise ValueError("a fixed prior needs A, B >= 0 with A + B > 0")

    def fitted(self, S, w) -> "Prior":
        """An auto prior with its strengths chosen from the weighted sessions; others as
        they are."""
        if self.kind != "auto" or self.strength:
            return self
        from ulr.clickmodels.counts import closed_form_counts
        clicks, exam, lasts = closed_form_counts(S, w)
        st = {"attractiveness": strength_of(clicks, exam),
              "satisfaction": strength_of(lasts, clicks),
              "examination": RANK_STRENGTH, "continuation": RANK_STRENGTH}
        centre = {"attractiveness": _pooled(clicks, exam), "satisfaction": _pooled(lasts, clicks)}
        return Prior(kind="auto", strength=st, centre=centre)

    @property
    def needs_recentre(self) -> bool:
        return self.kind == "auto" and self.recentre

    def recentred(self, counts: dict) -> "Prior":
        """The same prior centred on ``sum(num) / sum(den)`` of each family's expected
        ``counts`` (``{family: (num, den)}``), not to be moved again."""
        centre = dict(self.centre)
        centre.update({f: _pooled(num, den) for f, (num, den) in counts.items()})
        return Prior(kind=self.kind, strength=self.strength, centre=centre, recentre=False)

    def update(self, num, den, family: str, *, centre=None, fallback=None):
        """``(num + A) / (den + A + B)`` elementwise for ``family``.

        ``centre``: an auto prior's centre (default the pooled ``sum(num) / sum(den)``);
        ``fallback``: with no prior, the value where ``den`` is 0 (default the pooled one).
        """
        num = np.asarray(num, dtype=float)
        den = np.asarray(den, dtype=float)
        if self.kind == "fixed":
            return (num + self.a) / (den + self.a + self.b)
        tn, td = float(num.sum()), float(den.sum())
        pooled = tn / td if td > 0 else INIT
        if self.kind == "none":
            fb = pooled if fallback is None else fallback
            fb = np.broadcast_to(np.asarray(fb, dtype=float), num.shape)
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), fb)
        m = centre if centre is not None else self.centre.get(family, pooled)
        s = self.strength.get(family, RANK_STRENGTH)
        return (num + s * m) / (den + s)

    def to_dict(self) -> dict:
        """What the JSON's settings report."""
        if self.kind == "fixed":
            return {"kind": "fixed", "a": self.a, "b": self.b,
                    "text": f"{plain(self.a)} pseudo-click{'' if self.a == 1 else 's'} in "
                            f"{plain(self.a + self.b)} pseudo-results "
                            "on every probability"}
        if self.kind == "none":
            return {"kind": "none", "text": "no prior (maximum likelihood)"}
        st = {k: round(float(v), 3) for k, v in self.strength.items()}
        return {"kind": "auto", "strength": st,
                "centre": {k: round(float(v), 4) for k, v in self.centre.items()},
                "text": "centred on the pooled estimate; strength by empirical Bayes on the "
                        "training sessions" + (
                            f" ({plain(st['attractiveness'])} pseudo-results for attractiveness, "
                            f"{plain(st['satisfaction'])} for satisfaction)" if st else "")}


AUTO = Prior()
NONE = Prior(kind="none")


def fixed(a: float, b: float) -> Prior:
    return Prior(kind="fixed", a=float(a), b=float(b))


def _pooled(k, n) -> float:
    total = float(np.sum(n))
    return float(np.clip(float(np.sum(k)) / total, 1e-6, 1 - 1e-6)) if total > 0 else INIT


def strength_of(k, n) -> float:
    """Pseudo-trials of the Beta that the per-pair proportions ``k / n`` suggest: the
    beta-binomial method of moments (module docstring), clipped to
    [``MIN_STRENGTH``, ``MAX_STRENGTH``]."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    live = n > 0
    k, n = k[live], n[live]
    G, N = len(n), float(n.sum())
    if G < 2 or N <= 0:
        return MIN_STRENGTH
    m = float(k.sum()) / N
    if m <= 0 or m >= 1:
        return MAX_STRENGTH  # every pair at 0 or every pair at 1: nothing varies
    spread = float((n * (k / n - m) ** 2).sum()) / (m * (1 - m))
    room = N - float((n * n).sum()) / N - (G - 1)
    if room <= 0:  # one trial per pair: the spread cannot be told from binomial noise
        return MIN_STRENGTH
    rho = (spread - (G - 1)) / room
    if rho <= 0:
        return MAX_STRENGTH
    return float(np.clip(1.0 / rho - 1.0, MIN_STRENGTH, MAX_STRENGTH))


def parse(text) -> Prior:
    """``"auto"``, ``"none"`` or ``"A,B"`` (two non-negative numbers, not both 0)."""
    if isinstance(text, Prior):
        return text
    t = str(text if text is not None else "auto").strip().lower()
    if t in ("auto", ""):
        return AUTO
    if t in ("none", "off", "0,0"):
        return NONE
    parts = t.split(",")
    try:
        a, b = (float(x) for x in parts)
    except ValueError:
        raise UlrError(f"prior must be 'auto', 'none' or two numbers A,B (e.g. 1,1), "
                       f"got {text!r}.") from None
    if not (np.isfinite(a) and np.isfinite(b)) or a < 0 or b < 0 or a + b <= 0:
        raise UlrError(f"prior pseudo-counts A,B must be finite, non-negative and not both 0, "
                       f"got {text!r}.")
    return fixed(a, b)
