"""Page settings in the shareable URL, and the operator's caps on what a link can start."""

from __future__ import annotations

import os

import streamlit as st

from pages._ui.nav import ensure_app_run
from pages._ui.session import DATASET_KEY, OPE_SAMPLE, SOURCE_KEY


# Old URL keys still read (links shared before the rename) and dropped when the page writes
# the new one: one word per concept in the URL, the CLI (--bootstrap, --runs) and the JSON.
# "runs" counts repeated simulations on every page (Debiased recommendations said "seeds",
# Off-policy's simulation "sim_draws"); "dataset" names the log on every page (Off-policy
# said "log"); "theta_from" says where Compare rankers' θ comes from ("theta_source": a
# "source" is a registered lake table).
RENAMED = {"boot": "bootstrap", "seeds": "runs", "sim_draws": "sim_runs", "log": "dataset",
           "theta_source": "theta_from"}
# An old key wins over its new one when a link has both: Off-policy links carried the
# app-wide dataset= beside log=, the page's own choice. Values an old key spelled otherwise:
# Off-policy's log=sample was its bundled OPE sample.
OLD_VALUES = {("log", "sample"): OPE_SAMPLE}


def _given(name: str) -> bool:
    """The URL has ``name`` (or the old key it was renamed from)."""
    return name in st.query_params or any(
        new == name and old in st.query_params for old, new in RENAMED.items())


def _raw(name: str):
    """The URL's text for ``name``, read from the old key it was renamed from if present."""
    for old in (o for o, new in RENAMED.items() if new == name and o in st.query_params):
        raw = st.query_params[old]
        return OLD_VALUES.get((old, raw), raw)
    return st.query_params.get(name)


def url_param(name: str, default, *, kind=str):
    """A page setting from the shareable URL (``?name=value``), else ``default``.

    ``kind`` is ``str``, ``int``, ``float``, ``bool`` or ``list`` (comma-separated
    strings) or ``"floats"`` (comma-separated numbers). A value that does not
    parse falls back to the default.
    """
    ensure_app_run()
    raw = _raw(name)
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
        if v == v and v > hi and _given(name):
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
    for old in [o for o, new in RENAMED.items()
                if values.get(new) is not None and o in st.query_params]:
        del st.query_params[old]
