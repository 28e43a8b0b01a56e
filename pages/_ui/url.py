"""Page settings in the shareable URL, and the operator's caps on what a link can start."""

from __future__ import annotations

import os

import streamlit as st

from pages._ui.nav import ensure_app_run
from pages._ui.session import DATASET_KEY, SOURCE_KEY


# Every key a page reads from or writes to the shareable URL, with what it holds: one name per
# concept, as on the CLI and in the Python API (docs/glossary.md; tests/test_glossary.py).
# Keys of Off-policy's simulation and policy-learning views carry the view's prefix.
URL_KEYS = {
    "dataset": "the stored dataset (the log) the page reads",
    "source": "the registered source (lake or Spark table) the page reads",
    "report": "the report being edited or presented",
    "view": "Off-policy's view",
    "propensity": "the position-bias method (θ method); several on Position bias",
    "exposure": "Debiased recommendations' exposure model",
    "positions": "the list length (positions 1..K)",
    "items": "the number of items (Bandit lab's L)",
    "bootstrap": "bootstrap replicates",
    "interval": "how an interval is formed",
    "runs": "repeated simulation runs",
    "seed": "the random seed (of the first run)",
    "assume": "treat every row as randomized",
    "by": "the column the log is split by",
    "learner": "the learner",
    "metric": "the metric shown",
    "etas": "severities η",
    "queries": "simulated queries",
    "sessions": "simulated sessions",
    "theta": "θ typed by the visitor",
    "clip": "the clip of θ",
    "snips": "self-normalize the weights",
    "debias": "the bias correction",
    "test": "the paired test (Compare rankers); the held-out share (User models)",
    "correction": "the multiple-comparison correction",
    "models": "the models compared",
    "prior": "the click models' prior",
    "users": "simulated users",
    "alpha": "the popularity exponent",
    "epochs": "training epochs",
    "env": "the bandit environment",
    "algorithms": "the bandit algorithms",
    "p": "the attraction p",
    "delta": "the attraction gap",
    "d": "the number of tags d",
    "steps": "simulation steps",
    "run": "the Bandit lab run shown",
    "target": "the target policy",
    "temperature": "the target's temperature",
    "action": "what an action is (document or position)",
    "estimators": "the estimators",
    "sim_contexts": "simulated contexts",
    "sim_actions": "simulated actions",
    "sim_rows": "rows per simulated log",
    "sim_runs": "repeated simulation runs",
    "sim_logging": "the simulated logging policy",
    "sim_target": "the simulated target",
    "sim_estimators": "the simulation's estimators",
    "sim_seed": "the simulation's seed",
    "crm_data": "the policy learning's data",
    "crm_objective": "the learning objective",
    "crm_steps": "learning steps",
    "crm_seed": "the policy learning's seed",
}

# Retired keys (links shared before a rename): ignored, with one sentence on the page that
# reads the new key, and dropped when the page writes it. "propensity" is the θ method's
# key everywhere except Debiased recommendations, where it was the exposure model.
RETIRED = {"boot": "bootstrap", "seeds": "runs", "sim_draws": "sim_runs", "log": "dataset",
           "theta_source": "propensity", "theta_from": "propensity", "methods": "propensity",
           "method": "propensity", "K": "positions", "L": "items"}
RETIRED_ON_PAGE = {"exposure": ("propensity",)}  # an old key that is live on other pages


def _retired_for(name: str) -> list[str]:
    """The old keys a link may carry for the key ``name``."""
    return [o for o, new in RETIRED.items() if new == name] + list(RETIRED_ON_PAGE.get(name, ()))


def _note_retired(name: str) -> None:
    """One sentence per old key of ``name`` in the link: it is not read any more."""
    for old in _retired_for(name):
        if old in st.query_params:
            st.info(f"This link was made before a setting was renamed: its “{old}” is "
                    f"ignored, and the page reads “{name}” instead.")


def url_param(name: str, default, *, kind=str):
    """A page setting from the shareable URL (``?name=value``), else ``default``.

    ``kind`` is ``str``, ``int``, ``float``, ``bool`` or ``list`` (comma-separated
    strings) or ``"floats"`` (comma-separated numbers). A value that does not
    parse falls back to the default.
    """
    ensure_app_run()
    _note_retired(name)
    raw = st.query_params.get(name)
    if raw is None:
        return default
    try:
        if kind == "floats":
            return [float(v) for v in raw.split(",") if v.strip()] or default
        if kind is list:
            return [v for v in raw.split(",") if v] or default
        if kind is bool:
            return raw.lower() in ("1", "true", "yes", "on")
        return kind(raw)
    except ValueError:
        return default


# Operator settings: the most expensive work one visitor (or one shared link) can start.
# Each is an environment variable holding a positive integer; the value here is its default.
LIMITS = {
    "ULR_MAX_BOOTSTRAP": 200,   # bootstrap replicates per estimate
    "ULR_MAX_METHODS": 3,       # methods / learners / policies / estimators in one run
    "ULR_MAX_RUNS": 50,         # repeated simulation runs
    "ULR_MAX_STEPS": 100_000,   # rounds / steps of one simulation
}


def limit(env: str) -> int:
    """The operator's cap ``env`` (see :data:`LIMITS`); a missing or bad value is the default."""
    try:
        v = int(os.environ.get(env, ""))
    except ValueError:
        return LIMITS[env]
    return v if v >= 1 else LIMITS[env]


def _lowered(name: str, asked, cap: int, env: str, what: str) -> None:
    st.info(f"The link asks for {asked} {what}; this server allows at most {cap} "
            f"(operator setting {env}), so {cap} {'is' if cap == 1 else 'are'} used.")


def url_number(name: str, default, lo, hi, *, kind=int, cap: str | None = None,
               what: str | None = None):
    """A number from the shareable URL, or ``default`` when missing, NaN or out of [lo, hi].

    With ``cap`` (an operator setting in :data:`LIMITS`) below ``hi``, ``hi`` is
    that limit, and a URL value above it is lowered to it with one sentence
    (``what`` names the unit, e.g. "bootstrap replicates"); the default is capped
    silently. Pass the widget's own ``max_value`` as ``min(hi, limit(cap))``.
    """
    v = url_param(name, default, kind=kind)
    if cap is not None and limit(cap) < hi:
        hi = limit(cap)
        default = min(default, hi)
        if v == v and v > hi and name in st.query_params:
            _lowered(name, v, hi, cap, what or name)
            return kind(hi)
    return v if lo <= v <= hi else default


def url_index(name: str, options, default=None) -> int:
    """Index in ``options`` of the URL's choice, else of ``default`` (else 0): for selectboxes."""
    options = list(options)
    v = url_param(name, default)
    if v in options:
        return options.index(v)
    return options.index(default) if default in options else 0


def url_options(name: str, options, default, *, cap: str | None = None,
                what: str | None = None) -> list:
    """The URL's comma-separated choices that are in ``options``, else ``default``: for
    multiselects (unknown names in a shared link are dropped, not an error).

    With ``cap`` (an operator setting in :data:`LIMITS`), a link naming more
    choices keeps the first ones allowed, with one sentence (``what`` names them).
    """
    linked = list(dict.fromkeys(v for v in url_param(name, [], kind=list) if v in options))
    chosen = linked or list(default)
    if cap is not None and len(chosen) > limit(cap):
        if linked:  # a default above an operator's low cap is cut silently
            _lowered(name, len(chosen), limit(cap), cap, what or name)
        chosen = chosen[:limit(cap)]
    return chosen


def set_url_params(**values) -> None:
    """Write the page's key settings to the URL so the link reproduces the view.

    Only changed values are written, in one update: each write of ``st.query_params``
    sends the browser a message of its own."""
    changed = {}
    for k, v in values.items():
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            v = ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v)
        elif isinstance(v, bool):
            v = "1" if v else "0"
        elif isinstance(v, float):
            v = f"{v:g}"
        if st.query_params.get(k) != str(v):
            changed[k] = str(v)
    for key, name in (("dataset", st.session_state.get(DATASET_KEY)),
                      ("source", st.session_state.get(SOURCE_KEY))):
        # the app-wide selection, unless the page names its own (Off-policy's bundled sample)
        if name and values.get(key) is None and st.query_params.get(key) != name:
            changed[key] = name
    if changed:
        st.query_params.update(changed)
    for old in [o for new in values if values[new] is not None for o in _retired_for(new)
                if o in st.query_params]:
        del st.query_params[old]
