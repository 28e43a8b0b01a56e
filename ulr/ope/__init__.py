"""Off-policy evaluation and counterfactual learning from logged bandit feedback.

- :mod:`ulr.ope.registry` -- one :class:`Estimator` record per estimator (``REGISTRY``):
  label, family, needs (reward model, the target's whole distribution, loggers),
  hyperparameter, unbiasedness, per-row terms.
- :mod:`ulr.ope.estimators` -- IPS, clipped IPS, SNIPS, DR, DM, effective sample
  size, and a vectorized bootstrap for all of them (ratio form).
- :mod:`ulr.ope.feedback` -- :class:`BanditFeedback` from a click log with
  propensities (DuckDB aggregation), softmax target policies, the scorer seam.
- :mod:`ulr.ope.target_table` -- the target over every action from a table, checked
  against the log.
- :mod:`ulr.ope.evaluate` -- :func:`evaluate` / :func:`evaluate_log`: estimates,
  intervals, diagnostics and the documented warning rules.
- :mod:`ulr.ope.settings` -- :class:`OPESettings`: the options of one evaluation, checked
  once when built.
- :mod:`ulr.ope.simulate` -- a logged-bandit simulator with exact policy values,
  repeated-log studies, and the bundled sample log ``data/sample_ope.csv``.
- :mod:`ulr.ope.crm` -- counterfactual risk minimization of a linear softmax policy.
- :mod:`ulr.ope.figures` -- plotly figures.
"""

from ulr.ope.crm import CRMResult, learn_policy
from ulr.ope.estimators import (bootstrap_ratio, clipped_ips, direct_method, doubly_robust,
                                effective_sample_size, ips, snips)
from ulr.ope.registry import (REGISTRY, Estimator, Hyperparameter, defaults, register,
                              unregister)
from ulr.ope.evaluate import OPEResult, evaluate, evaluate_log, target_policy
from ulr.ope.settings import OPESettings
from ulr.ope.feedback import (BanditFeedback, Candidates, FrameLog, LinearScorer,
                              feedback_from_frame, feedback_from_log, fit_linear_scorer,
                              policy_from_scorer, softmax_policy)
from ulr.ope.simulate import (BanditSimulation, bias_variance_table, make_sample_log,
                              repeated_intervals, repeated_point_estimates, simulate_bandit,
                              write_sample_log)

__all__ = [
    "BanditFeedback", "BanditSimulation", "CRMResult", "Candidates", "defaults",
    "Estimator", "Hyperparameter", "REGISTRY", "register", "unregister",
    "FrameLog", "LinearScorer", "OPEResult", "OPESettings", "bias_variance_table",
    "bootstrap_ratio", "clipped_ips", "direct_method", "doubly_robust",
    "effective_sample_size", "evaluate", "evaluate_log", "feedback_from_frame",
    "feedback_from_log", "fit_linear_scorer", "ips", "learn_policy", "make_sample_log",
    "policy_from_scorer", "repeated_intervals", "repeated_point_estimates", "simulate_bandit",
    "snips", "softmax_policy", "target_policy", "write_sample_log",
]


def __getattr__(name: str):
    # the snapshot of the defaults taken at import is gone: the registry can change later
    if name == "DEFAULT_ESTIMATORS":
        raise AttributeError("ulr.ope.DEFAULT_ESTIMATORS is now ulr.ope.defaults() (the "
                             "registry's defaults when called, not at import).")
    raise AttributeError(f"module 'ulr.ope' has no attribute {name!r}")
