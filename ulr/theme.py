"""One visual language for the app and every export.

``TEMPLATE`` is a plotly template registered as ``"ulr"``; ``color_for(name)``
gives each method, learner and algorithm the same colour on every page.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

FONT = "Inter, 'Segoe UI', Helvetica, Arial, sans-serif"

# Colour-blind-safe palette (Okabe & Ito 2008, "Color Universal Design"), then
# Tol's muted set for the rest: distinct for deuteranopes and protanopes.
PALETTE = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
    "#56B4E9", "#882255", "#999933", "#44AA99", "#AA4499",
]
COLORS = {
    # truth and baselines
    "truth": "#111111",
    "true theta": "#111111",
    # (a position-bias method's colour is in its record, ulr.propensity.registry)
    # rankers
    "naive": "#777777",
    "ipw": "#0072B2",
    "ipw (true theta)": "#E69F00",
    "ipw (estimated theta)": "#0072B2",
    # bandits
    "ucb1": "#882255",
    "ts": "#AA4499",
    "cascade-ucb1": "#D55E00",
    "cascade-klucb": "#0072B2",
    "cascade-ts": "#009E73",
    "cascade-linucb": "#E69F00",
    "cascade-lints": "#CC79A7",
    # recommenders (an off-policy estimator's colour is in its record, ulr.ope.registry)
    "naive-mf": "#777777",
    "propensity-mf": "#0072B2",
    "cause": "#009E73",
}


def color_for(name: str, index: int = 0) -> str:
    """Colour of a named series (:data:`COLORS`, else an off-policy estimator's or a
    position-bias method's record); unknown names get ``PALETTE[index]``."""
    from ulr.ope import registry
    from ulr.propensity.registry import spec

    key = str(name).lower()
    return (COLORS.get(key) or registry.color(key) or spec(key).color
            or PALETTE[index % len(PALETTE)])


def band_color(hex_color: str, alpha: float = 0.18) -> str:
    """Translucent version of ``hex_color`` for confidence bands."""
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


TEMPLATE = go.layout.Template(
    layout=dict(
        font=dict(family=FONT, size=14, color="#222"),
        title=dict(font=dict(size=18), x=0.0, xanchor="left", y=0.98, yanchor="top"),
        colorway=PALETTE,
        paper_bgcolor="white",
        plot_bgcolor="white",
        xaxis=dict(showgrid=True, gridcolor="#e6e6e6", zeroline=False,
                   linecolor="#888", ticks="outside", automargin=True,
                   title=dict(standoff=8)),
        # automargin: the axis title is pushed clear of long tick labels (no overlap
        # in exports, where the figure has a fixed size).
        yaxis=dict(showgrid=True, gridcolor="#e6e6e6", zeroline=False,
                   linecolor="#888", ticks="outside", automargin=True,
                   title=dict(standoff=12)),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
        margin=dict(l=60, r=20, t=100, b=50),
        hoverlabel=dict(font=dict(family=FONT)),
    )
)
pio.templates["ulr"] = TEMPLATE


def apply(fig: go.Figure, *, title: str | None = None, x: str | None = None,
          y: str | None = None) -> go.Figure:
    """Apply the ulr template and axis titles (with units) to ``fig``."""
    fig.update_layout(template="ulr")
    if title is not None:
        fig.update_layout(title=title)
    if x is not None:
        fig.update_xaxes(title_text=x)
    if y is not None:
        fig.update_yaxes(title_text=y)
    return fig


# --------------------------------------------------------------------------- percent axes


def _nice_step(span: float, target: int = 6) -> float:
    """A 1-2-5 step that cuts ``span`` into about ``target`` intervals."""
    raw = span / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def percent_decimals(step: float) -> int:
    """Decimals a percent tick label needs so that ticks ``step`` apart differ."""
    pct = abs(step) * 100
    if pct <= 0 or not math.isfinite(pct):
        return 1
    d = 0
    while d < 6 and abs(round(pct * 10 ** d) - pct * 10 ** d) > 1e-6:
        d += 1
    return d


def percent_axis(fig: go.Figure, lo: float, hi: float, *, axis: str = "y",
                 from_zero: bool = True, **selector) -> go.Figure:
    """Percent tick labels that stay distinct from 0.1% to 100%.

    The axis gets a 1-2-5 step (about six ticks over ``[lo, hi]``, or
    ``[0, hi]`` with ``from_zero``) and exactly the decimals that step needs:
    a 0.4% CTR axis reads 0%, 0.1%, 0.2%, ... instead of 0%, 0%, 0%, 1%.
    """
    lo = 0.0 if from_zero else float(lo)
    hi = float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        hi = lo + 0.01
    pad = (hi - lo) * 0.05
    step = _nice_step(hi - lo + pad)
    upd = dict(tickformat=f".{percent_decimals(step)}%", tick0=0, dtick=step,
               range=[lo if from_zero else lo - pad, hi + pad])
    (fig.update_yaxes if axis == "y" else fig.update_xaxes)(**upd, **selector)
    return fig


def _trace_extent(tr, axis: str):
    vals = []
    v = getattr(tr, axis, None)
    if v is None:
        return vals
    try:
        base = np.asarray(v, dtype=float).ravel()
    except (TypeError, ValueError):
        return vals
    vals.append(base)
    err = getattr(tr, f"error_{axis}", None)
    if err is not None and err.array is not None:
        up = np.asarray(err.array, dtype=float).ravel()
        dn = np.asarray(err.arrayminus if err.arrayminus is not None else err.array,
                        dtype=float).ravel()
        if up.shape == base.shape and dn.shape == base.shape:
            vals += [base + up, base - dn]
    return vals


def fix_percent_axes(fig: go.Figure) -> go.Figure:
    """Apply :func:`percent_axis` to every axis of ``fig`` formatted as percent.

    Used on every figure the app exports, so a page that set ``tickformat=".0%"``
    still gets distinct ticks in the report and slides.
    """
    lay = fig.layout
    for name in [k for k in lay.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]:
        ax = lay[name]
        if not (ax.tickformat or "").endswith("%") or ax.dtick is not None:
            continue
        letter = name[0]
        ref = letter + name[5:]  # "yaxis2" -> "y2"
        vals = [a for tr in fig.data
                if (getattr(tr, f"{letter}axis", None) or letter) == ref
                for a in _trace_extent(tr, letter)]
        vals = np.concatenate(vals) if vals else np.array([])
        vals = vals[np.isfinite(vals)]
        if vals.size == 0:
            continue
        lo, hi = float(vals.min()), float(vals.max())
        step = _nice_step(max(hi - min(lo, 0.0), 1e-9) * 1.05)
        ax.update(tickformat=f".{percent_decimals(step)}%", tick0=0, dtick=step)
    return fig


# --------------------------------------------------------------------------- comparisons


def dots_for_bars(fig: go.Figure, *, pad: float = 0.15) -> go.Figure:
    """Turn bar traces into dots with their intervals, on axes fitted to the data.

    A bar must start at zero, which hides 0.93 against 0.95; a dot with its
    interval can sit on an axis that spans only the values and intervals.
    """
    extents: dict[str, list] = {}
    new = []
    for tr in fig.data:
        if tr.type != "bar":
            new.append(tr)
            continue
        d = tr.to_plotly_json()
        marker = d.pop("marker", {}) or {}
        for k in ("offsetgroup", "width", "offset", "base", "textposition", "alignmentgroup"):
            d.pop(k, None)
        d.update(type="scatter", mode="markers",
                 marker=dict(color=marker.get("color"), size=13, symbol="circle"))
        sc = go.Scatter(d)
        new.append(sc)
        extents.setdefault(d.get("yaxis", "y"), []).extend(_trace_extent(sc, "y"))
    fig.data = []
    fig.add_traces(new)
    for ref, vals in extents.items():
        vals = np.concatenate(vals) if vals else np.array([])
        vals = vals[np.isfinite(vals)]
        if vals.size == 0:
            continue
        lo, hi = float(vals.min()), float(vals.max())
        span = (hi - lo) or abs(hi) * 0.1 or 1.0
        fig.layout["yaxis" + ref[1:]].update(range=[lo - pad * span, hi + pad * span])
    return fig


# --------------------------------------------------------------------------- numbers


def text_missing(v) -> bool:
    from ulr.text import missing
    return missing(v)


def sig_decimals(values, sig: int = 3, *, max_decimals: int = 6) -> int:
    """Decimals that give the largest magnitude in ``values`` ``sig`` significant figures.

    One count per column, so every number in it lines up (0.093 next to 4.456,
    not 4.4555 next to 0.00391331).
    """
    a = np.abs(np.asarray(values, dtype=float))
    a = a[np.isfinite(a) & (a > 0)]
    if a.size == 0:
        return 0
    top = math.floor(math.log10(a.max()))
    return int(min(max(sig - 1 - top, 0), max_decimals))


def format_number(v, decimals: int | None) -> str:
    """``v`` at ``decimals`` decimals (None: as given, "2" for 2.0, "0.5" for 0.5)."""
    if v is None:
        return ""
    if decimals is None:
        from ulr.quantity import setting
        return "" if text_missing(v) else setting(float(v))
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    from ulr.text import plain  # the one number formatter (no exponent, no nan)
    return plain(f, decimals)


#: columns that hold a setting as the user gave it (η = 2, not 2.00 or 2.000000)
SETTING_COLUMNS = frozenset({"eta", "η"})


def column_formats(df: pd.DataFrame, *, sig: int = 3) -> dict:
    """``{column: decimals}`` for the float columns of ``df`` (integer columns: 0; a
    setting column of :data:`SETTING_COLUMNS`: None, each value as given)."""
    out = {}
    for c in df.columns:
        s = df[c]
        if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
            continue
        if c in SETTING_COLUMNS:
            out[c] = None
        elif pd.api.types.is_integer_dtype(s):
            out[c] = 0
        else:
            out[c] = sig_decimals(s.to_numpy(dtype=float), sig)
    return out


def format_table(df: pd.DataFrame, *, sig: int = 3) -> pd.DataFrame:
    """The table with every numeric column as text at one number of decimals.

    The one formatter used by the Report page and every export.
    """
    fmts = column_formats(df, sig=sig)
    out = df.copy()
    for c, d in fmts.items():
        out[c] = [format_number(v, d) for v in df[c]]
    for c in out.columns:  # a flag reads yes/no, never Python's True/False
        if c not in fmts and (pd.api.types.is_bool_dtype(df[c]) or df[c].dtype == object):
            out[c] = [("yes" if v else "no") if isinstance(v, (bool, np.bool_)) else v
                      for v in df[c]]
    return out


#: columns that hold ulr's own short names (metrics, estimators, ...): shown in words
NAME_COLUMNS = frozenset({"metric", "estimator", "method", "model", "ranker", "system",
                          "algorithm"})


def styled(df: pd.DataFrame, *, rates=(), points=(), relative=(), interval=None,
           groups=(), sig: int = 3):
    """``df`` as a pandas Styler that reads as the exports do: one precision per column,
    flags yes/no, a missing cell empty (never "None" or "nan"); the columns ``rates``
    (click rates) in %, ``points`` (differences of click rates) in signed percentage
    points, ``relative`` (relative changes) in signed %. With ``interval`` (the names of a
    row's lower and upper bound), each row's rates are rounded to that row's interval, as
    its card and sentence read it (docs/verdicts.md §2, one quantity one precision);
    ``groups`` does the same for other numbers: ``(value, lower, upper)`` column triples,
    each row's three cells rounded to that row's interval (a value whose name starts with
    "delta" is signed). The data underneath stay numbers (a page's table still sorts by
    value)."""
    from ulr.text import plain
    special = [c for c in (*rates, *points, *relative) if c in df]
    fmts = styler_formats(df.drop(columns=special), sig=sig)
    for cols, unit, sign in ((rates, "%", False), (points, " points", True),
                             (relative, "%", True)):
        for c in (c for c in cols if c in df):
            vals = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float) * 100
            d = sig_decimals(vals, sig)
            fmts[c] = (lambda v, d=d, unit=unit, sign=sign: "" if text_missing(v) else
                       plain(float(v) * 100, d, sign=sign) + unit)
    from ulr.text import words
    for c in df.columns:
        if c not in fmts and (pd.api.types.is_bool_dtype(df[c]) or df[c].dtype == object
                              or pd.api.types.is_string_dtype(df[c])):
            name = c in NAME_COLUMNS  # ulr's own short names in words ("local auc")
            fmts[c] = lambda v, name=name: (
                ("yes" if v else "no") if isinstance(v, (bool, np.bool_))
                else "" if v is None or text_missing(v)
                else words(v) if name and isinstance(v, str) else v)
    out = df.style.format(fmts, na_rep="")
    from ulr.quantity import Quantity
    lo_col, hi_col = interval or (None, None)
    cols = [c for c in rates if c in df]
    if lo_col in df and hi_col in df and cols:
        for i in range(len(df)):
            row = df.iloc[i]
            q = Quantity("rate", row[cols[0]], row[lo_col], row[hi_col])
            if q.error is None:
                continue
            out = out.format(lambda v, q=q: "" if text_missing(v) else q.number(v),
                             subset=pd.IndexSlice[df.index[i:i + 1], cols])
    for v_col, l_col, h_col in groups:
        if not all(c in df for c in (v_col, l_col, h_col)):
            continue
        for i in range(len(df)):
            row = df.iloc[i]
            q = Quantity("number", row[v_col], row[l_col], row[h_col],
                         signed=str(v_col).startswith("delta"))
            if q.error is None:
                continue
            out = out.format(lambda v, q=q: "" if text_missing(v) else q.number(v),
                             subset=pd.IndexSlice[df.index[i:i + 1], [v_col, l_col, h_col]])
    return out


def styler_formats(df: pd.DataFrame, *, sig: int = 3) -> dict:
    """``{column: format string}`` for ``DataFrame.style.format`` (pages)."""
    return {c: (lambda v, d=d: format_number(v, d)) for c, d in column_formats(df, sig=sig).items()}


# --------------------------------------------------------------------------- metric labels

# One mapping from a short metric name to the words shown to people; the short
# name goes into the tooltip (:func:`metric_help`).
METRIC_LABELS = {
    "arp": "Average rank of relevant results (lower is better)",
    "ndcg": "nDCG: ranking quality, 1 = ideal (higher is better)",
    "ndcg@10": "nDCG at 10: ranking quality of the top 10, 1 = ideal (higher is better)",
    "ndcg@k": "nDCG at k: ranking quality of the top k, 1 = ideal (higher is better)",
    "dcg": "Discounted cumulative gain (higher is better)",
    "mrr": "Mean reciprocal rank of the first relevant result (higher is better)",
    "pauc": "Partial area under the ROC curve (higher is better)",
    "auc": "Area under the ROC curve (higher is better)",
    "local_auc": "Local AUC: AUC of the top of each list (higher is better)",
    "click_loglik": "Held-out click log-likelihood per impression (higher is better)",
    "theta": "Examination probability",
    "theta_k / theta_1": "Examination probability relative to position 1",
    "eta": "Position-bias severity η (0 = no bias)",
    "ctr": "Click-through rate",
    "ess": "Effective sample size",
    "regret": "Cumulative regret (lower is better)",
    "mse": "Mean squared error (lower is better)",
}


def metric_label(name: str) -> str:
    """Human label of a metric, or of an off-policy estimator's estimates (its record's
    ``description``); the name itself when unknown."""
    from ulr.ope import registry

    key = str(name).strip().lower()
    return METRIC_LABELS.get(key) or registry.description(key) or str(name)


def metric_help(name: str) -> str:
    """Tooltip text: the label and the short name used in tables, CSVs and the CLI."""
    label = metric_label(name)
    return f"{label} — short name “{name}”" if label != str(name) else str(name)


# --------------------------------------------------------------------------- slides


SLIDE_FONT = 19   # chart text on a slide, in the deck's design pixels (720 px high)


def slide_layout(fig: go.Figure, *, font: int = SLIDE_FONT) -> go.Figure:
    """Slide-sized type for a figure (titles, ticks, legend, annotations, hover).

    Tick labels are one pixel smaller than ``font``, the title a tenth larger;
    the margins are small because every axis pushes its own (automargin).
    """
    fig.update_layout(font=dict(size=font), title=dict(font=dict(size=round(font * 1.1))),
                      legend=dict(font=dict(size=font - 2)),
                      hoverlabel=dict(font=dict(size=font - 4)),
                      margin=dict(l=10, r=10, t=20, b=10))
    fig.update_annotations(font_size=font - 2)
    fig.update_xaxes(tickfont=dict(size=font - 1), title_font=dict(size=font), automargin=True)
    fig.update_yaxes(tickfont=dict(size=font - 1), title_font=dict(size=font), automargin=True)
    return fig
