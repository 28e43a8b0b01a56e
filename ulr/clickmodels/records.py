"""One record per click model: the one home of its name, label, class, kind and simulators
(issue 53). :mod:`ulr.clickmodels` derives ``MODELS``, ``LABELS``, ``DEFAULT`` and
``CASCADE_TYPE`` from :data:`RECORDS`; the simulators (:mod:`ulr.simulate`,
:mod:`ulr.study.simulate`, :mod:`ulr.ope.slate`) dispatch through a record's hooks and
accept the models that have one; nothing elsewhere compares a click model's name.

A leaf module (numpy, the hooks of :mod:`.simulators` and :mod:`ulr.errors`): the fitted
model's class is imported on first use, so the verdicts and the simulators read the records
without importing every model.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Callable

from ulr.clickmodels import simulators as sim


@dataclasses.dataclass(frozen=True)
class ClickModel:
    """One click model.

    Attributes
    ----------
    label : str
        Its short name on charts and tables ("PBM").
    fit : str
        ``"module:Class"`` of the model fitted on sessions (:class:`~ulr.clickmodels.base.Model`).
    description : str
        Its long name for a picker ("position-based (PBM)").
    cascade_type : bool
        Examination stops or continues after each result, top-down (cascade, DCM, DBN,
        SDBN and their counting forms).
    position_type : bool
        Examination is set by the rank (and the last click), never stopped by a click:
        PBM and UBM, the pair the comparison's "cascade-type models fit far better" weighs.
    default : bool
        In the comparison when no model is named (the page's, the CLI's and the audit's).
    assumed : bool
        The model every position-bias method assumes (the PBM), whose misfit the verdicts
        of position bias weigh (:func:`ulr.verdict.pbm_misfit`).
    per_rank_truth : bool
        Its simulation takes ``theta``, ``eps_plus`` and ``eps_minus`` per position
        (:func:`.simulators.trust_truth`).
    binary_relevance : bool
        In :func:`ulr.simulate.simulate_clicks` relevance is the grade above 0, not the
        graded attractiveness.
    world, graded, study : callable or None
        Its hooks in :func:`ulr.simulate.simulate_click_model`,
        :func:`ulr.simulate.simulate_clicks` and :func:`ulr.study.simulate.simulate_clicks`
        (None: that simulator does not offer it).
    slate : tuple of two callables or None
        ``(expected clicks, sampled clicks)`` in :mod:`ulr.ope.slate`'s world.
    """

    label: str
    fit: str
    description: str
    cascade_type: bool = False
    position_type: bool = False
    default: bool = False
    assumed: bool = False
    per_rank_truth: bool = False
    binary_relevance: bool = False
    world: Callable | None = None
    graded: Callable | None = None
    study: Callable | None = None
    slate: tuple | None = None

    @property
    def cls(self) -> type:
        """The fitted model's class (imported on first use)."""
        module, _, name = self.fit.partition(":")
        return getattr(importlib.import_module(module), name)


_M = "ulr.clickmodels."
RECORDS: dict[str, ClickModel] = {
    "pbm": ClickModel(
        "PBM", _M + "pbm:PBM", "position-based (PBM)", position_type=True, default=True,
        assumed=True, world=sim.world_pbm, graded=sim.graded_pbm, study=sim.study_pbm,
        slate=(sim.slate_pbm_expected, sim.slate_pbm_clicks)),
    "cascade": ClickModel(
        "cascade", _M + "cascade:Cascade", "cascade", cascade_type=True, default=True,
        world=sim.world_cascade, graded=sim.graded_cascade, study=sim.study_cascade,
        slate=(sim.slate_cascade_expected, sim.slate_cascade_clicks)),
    "dcm": ClickModel(
        "DCM", _M + "dcm:DCM", "dependent click model (DCM)", cascade_type=True, default=True,
        world=sim.world_dcm),
    "dbn": ClickModel(
        "DBN", _M + "dbn:DBN", "dynamic Bayesian network (DBN)", cascade_type=True,
        default=True, world=sim.world_dbn, study=sim.study_dbn),
    "sdbn": ClickModel(
        "SDBN", _M + "sdbn:SDBN", "simplified DBN (SDBN)", cascade_type=True, default=True,
        world=sim.world_sdbn),
    "ubm": ClickModel(
        "UBM", _M + "ubm:UBM", "user browsing model (UBM)", position_type=True, default=True,
        world=sim.world_ubm, study=sim.study_ubm),
    "trust": ClickModel(
        "trust bias", _M + "trust:Trust", "trust bias", per_rank_truth=True,
        binary_relevance=True, world=sim.world_trust, graded=sim.graded_trust,
        study=sim.study_trust),
    "sdbn-counts": ClickModel(
        "SDBN (counting)", _M + "sdbn:SDBNCounts", "SDBN by counting", cascade_type=True),
    "dcm-counts": ClickModel(
        "DCM (counting)", _M + "dcm:DCMCounts", "DCM by counting", cascade_type=True),
}

PLAIN = ClickModel("", "", "")  # what an unregistered name is read as


def get(name) -> ClickModel:
    """``name``'s record, or the plain one (no flag, no hook) when there is none."""
    return RECORDS.get(str(name), PLAIN)


def flagged(flag: str) -> tuple[str, ...]:
    """The models whose record sets ``flag`` (or has the hook ``flag``), in record order."""
    return tuple(n for n, r in RECORDS.items() if getattr(r, flag))


def assumed() -> str:
    """The name of the model the position-bias methods assume (the PBM)."""
    return flagged("assumed")[0]


def quoted(names) -> str:
    """``'pbm', 'cascade' or 'trust'``: names for a sentence."""
    q = [repr(n) for n in names]
    return q[0] if len(q) == 1 else f"{', '.join(q[:-1])} or {q[-1]}"
