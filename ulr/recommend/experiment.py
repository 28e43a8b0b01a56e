"""Compare naive MF, propensity MF and CausE on one MNAR world; results table and figures.

For every model a small grid of configurations is trained; each run records,
per epoch, the model's own validation criterion and the test MSE. Two
selections are reported:

- *best on validation*: the (configuration, epoch) with the lowest validation
  criterion -- what a practitioner would pick;
- *best on test*: the (configuration, epoch) with the best test score -- an
  oracle, shown so that a misleading validation signal is visible (a large gap
  between the two columns).

Scores are relative improvements of the test MSE over predicting the test
mean: ``1 - MSE / Var(test ratings)`` (0 = no better than the constant, < 0 worse).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ulr import theme, validate
from ulr.errors import UlrError
from ulr.recommend.data import MNARData
from ulr.recommend.models import MODELS, MFConfig, train
from ulr.result import Result, jsonable
from ulr.verdict import Reason, Verdict

#: simulated worlds averaged by default, on the page and the ``recommend`` command: the
#: verdict needs a spread over seeds (one seed has no interval)
N_SEEDS = 3
LABELS = {"naive-mf": "naive MF", "propensity-mf": "propensity MF (IPS)", "cause": "CausE"}
CRITERIA = {"naive-mf": "MSE on held-out MNAR ratings (biased)",
            "propensity-mf": "IPS-weighted MSE on held-out MNAR ratings",
            "cause": "MSE on the held-out randomized slice"}


def default_grid(model: str, base: MFConfig = MFConfig()) -> list[MFConfig]:
    """The configurations tried per model (kept small: a few seconds in all)."""
    if model == "cause":
        return [replace(base, discrepancy=lam, control_weight=cw)
                for lam in (1.0, 100.0) for cw in (1.0, 3.0)]
    return [replace(base, l2=l2) for l2 in (0.5, 2.0, 8.0)]


@dataclass(frozen=True)
class Experiment:
    """All runs: ``history`` (long), ``table`` (results), ``configs`` (per model and run)."""

    history: pd.DataFrame  # model, run, epoch, train_loss, validation, test_mse, test_improvement
    table: pd.DataFrame
    configs: dict
    summary: dict

    def curves(self) -> pd.DataFrame:
        """Learning curve per model: the run selected on validation."""
        sel = self.table.set_index("model")["run (best on validation)"]
        h = self.history
        return pd.concat([h[(h["model"] == m) & (h["run"] == r)] for m, r in sel.items()],
                         ignore_index=True)


@validate.retired(propensity="exposure")
def run_experiment(data: MNARData, *, models=MODELS, base: MFConfig = MFConfig(),
                   grids: dict | None = None, exposure: str = "naive-bayes",
                   progress=None) -> Experiment:
    """Train every model over its grid and build the results table.

    ``progress(done, total, label)`` is called after each run.
    """
    grids = experiment_grids(models, base, grids)
    total = sum(len(g) for g in grids.values())
    runs = []
    for m, grid in grids.items():
        for r, cfg in enumerate(grid):
            res = train(data, m, cfg, exposure=exposure)
            runs.append((m, r, cfg, res.history))
            if progress is not None:
                progress(len(runs), total, f"{LABELS[m]} run {r + 1}/{len(grid)}")
    return summarize_runs(data, runs, exposure=exposure)


def experiment_grids(models, base: MFConfig = MFConfig(), grids: dict | None = None) -> dict:
    """Configurations per model: the given grid, else :func:`default_grid`."""
    models = list(dict.fromkeys(models))
    bad = [m for m in models if m not in MODELS]
    if bad or not models:
        raise UlrError(f"unknown model {', '.join(bad) or '(none)'}; choose from "
                       f"{', '.join(MODELS)}.")
    return {m: (grids or {}).get(m) or default_grid(m, base) for m in models}


@validate.retired(propensity="exposure")
def summarize_runs(data: MNARData, runs: list, *, exposure: str = "naive-bayes") -> Experiment:
    """Build the :class:`Experiment` from ``(model, run, config, history)`` tuples."""
    frames = [h.assign(model=m, run=r) for m, r, _, h in runs]
    configs: dict = {}
    cfg_of = {}
    for m, r, cfg, _ in runs:
        configs.setdefault(m, []).append(asdict(cfg))
        cfg_of[(m, r)] = cfg
    models = list(configs)
    hist = pd.concat(frames, ignore_index=True)
    hist = hist[["model", "run", "epoch", "train_loss", "validation", "test_mse",
                 "test_improvement"]]
    rows = []
    for m in models:
        h = hist[hist["model"] == m]
        v = h.loc[h["validation"].idxmin()]
        t = h.loc[h["test_improvement"].idxmax()]
        rows.append({
            "model": m,
            "validation criterion": CRITERIA[m],
            "run (best on validation)": int(v["run"]),
            "epoch (best on validation)": int(v["epoch"]),
            "test MSE (best on validation)": float(v["test_mse"]),
            "improvement (best on validation)": float(v["test_improvement"]),
            "run (best on test)": int(t["run"]),
            "epoch (best on test)": int(t["epoch"]),
            "improvement (best on test)": float(t["test_improvement"]),
            "setting (best on validation)": _describe(m, cfg_of[(m, int(v["run"]))]),
        })
    table = pd.DataFrame(rows)
    summary = {**data.summary(), "test_variance": float(np.var(data.test.rating)),
               "propensity": exposure}
    return Experiment(history=hist, table=table, configs=configs, summary=summary)


def _describe(model: str, cfg: MFConfig) -> str:
    """A run's setting in words: "L2 penalty 2"; CausE's "tie strength 100 (L2 distance to
    the random slice's factors), random-slice weight 3, L2 penalty 2"."""
    from ulr.quantity import setting
    penalty = f"L2 penalty {setting(cfg.l2)}"
    if model == "cause":
        return (f"tie strength {setting(cfg.discrepancy)} ({cfg.discrepancy_norm.upper()} "
                f"distance to the random slice's factors), random-slice weight "
                f"{setting(cfg.control_weight)}, {penalty}")
    return penalty


def results_table(exp: Experiment) -> pd.DataFrame:
    """The table in display form (model labels, percentages)."""
    t = exp.table.copy()
    t.insert(0, "method", t["model"].map(LABELS))
    return t.drop(columns=["model"])


def learning_curves_figure(exp: Experiment, *,
                           title: str = "Learning curves (run selected on validation)"
                           ) -> go.Figure:
    """Per model: its own validation criterion (left) and the test improvement (right)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        "own validation criterion (lower is better)", "test MSE improvement over the test mean"))
    cur = exp.curves()
    sel = exp.table.set_index("model")
    for i, (m, g) in enumerate(cur.groupby("model", sort=False)):
        c = theme.color_for(m, i)
        fig.add_trace(go.Scatter(x=g["epoch"], y=g["validation"], mode="lines", name=LABELS[m],
                                 legendgroup=m, line=dict(color=c)), row=1, col=1)
        fig.add_trace(go.Scatter(x=g["epoch"], y=g["test_improvement"], mode="lines",
                                 name=LABELS[m], legendgroup=m, showlegend=False,
                                 line=dict(color=c)), row=1, col=2)
        e = int(sel.loc[m, "epoch (best on validation)"])
        y = float(g.loc[g["epoch"] == e, "test_improvement"].iloc[0])
        fig.add_trace(go.Scatter(x=[e], y=[y], mode="markers", legendgroup=m, showlegend=False,
                                 marker=dict(color=c, size=10, symbol="diamond"),
                                 hovertemplate=f"{LABELS[m]}: chosen on validation at epoch "
                                               f"{e}<br>improvement %{{y:.1%}}<extra></extra>"),
                      row=1, col=2)
    fig.add_hline(y=0, line=dict(color=theme.color_for("truth"), width=1), row=1, col=2)
    theme.apply(fig, title=title)
    fig.update_layout(margin=dict(t=120), legend=dict(y=1.16))  # clear of the subplot titles
    fig.update_xaxes(title_text="epoch")
    fig.update_yaxes(title_text="validation loss (stars²)", row=1, col=1)
    fig.update_yaxes(title_text="1 - MSE / Var(test)", tickformat=".0%", row=1, col=2)
    return fig


def results_figure(exp: Experiment, *, title: str = "Test MSE improvement over the test mean"
                   ) -> go.Figure:
    """Grouped bars: best on validation vs best on test, per model."""
    t = exp.table
    fig = go.Figure()
    for col, name, op, pattern in (
            ("improvement (best on validation)", "best on validation", 1.0, ""),
            ("improvement (best on test)", "best on test (oracle)", 0.45, "/")):
        fig.add_trace(go.Bar(x=[LABELS[m] for m in t["model"]], y=t[col], name=name,
                             marker=dict(color=[theme.color_for(m, i)
                                                for i, m in enumerate(t["model"])],
                                         opacity=op, pattern_shape=pattern),
                             texttemplate="%{y:.1%}", textposition="outside"))
    fig.add_hline(y=0, line=dict(color=theme.color_for("truth"), width=1))
    theme.apply(fig, title=title, x="model", y="1 - MSE / Var(test)")
    fig.update_yaxes(tickformat=".0%")
    fig.update_layout(barmode="group")
    return fig


def seeds_table(experiments: list) -> pd.DataFrame:
    """One row per (seed, model): the improvement of the configuration chosen on
    validation, from :class:`Experiment` s of several seeds (seed = list index)."""
    rows = []
    for s, exp in enumerate(experiments):
        for r in exp.table.to_dict("records"):
            rows.append({"seed": s, "model": r["model"],
                         "improvement": float(r["improvement (best on validation)"])})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class SeedComparison(Result):
    """The experiments of several simulated worlds (seeds), with the verdict over them.

    Attributes
    ----------
    experiments : tuple of Experiment
        One per world, in seed order; the tables and charts show the first.
    verdict : Verdict
        Does a debiased model beat naive MF over the worlds (:func:`_verdict`); set when
        built; ``inconclusive`` when the experiments lack naive MF or a debiased model.
    evidence : dict
        The first world's training rows and test ratings, and the number of worlds.
    """

    experiments: tuple
    verdict: Verdict
    evidence: dict

    def tables(self) -> dict:
        return {"worlds": seeds_table(self.experiments)}

    def to_dict(self) -> dict:
        return {"worlds": jsonable(seeds_table(self.experiments).to_dict(orient="records")),
                "evidence": jsonable(self.evidence), "verdict": self.verdict.to_dict()}

    @property
    def first(self) -> Experiment:
        return self.experiments[0]


@validate.params(level=validate.level)
def compare_seeds(experiments, *, level: float = 0.95) -> SeedComparison:
    """The :class:`SeedComparison` of the :class:`Experiment` s of several seeds (seed = index)."""
    exps = tuple(experiments)
    if not exps:
        raise UlrError("compare at least one simulated world.")
    models = list(exps[0].table["model"])
    verdict = (_verdict(exps, level=level) if "naive-mf" in models and len(models) > 1
               else Verdict("inconclusive", "No comparison: naive MF and at least one debiased "
                            "model are needed to say whether debiasing helps.",
                            "test improvement over naive MF",
                            reasons=(Reason("one_model", "Naive MF and at least one debiased "
                                                         "model are needed."),)))
    s = exps[0].summary
    return SeedComparison(experiments=exps, verdict=verdict,
                          evidence={"rows": int(s["mnar_ratings"] + s["random_ratings"]),
                                    "test ratings": int(s["test_ratings"]),
                                    "worlds": len(exps)})


def _verdict(experiments, *, level: float = 0.95):
    """Does a debiased model beat naive MF? (docs/verdicts.md, "Debiased recommendation").

    Per seed (one simulated world each) the test improvement of the best
    debiased model (by mean) minus naive MF's, both chosen on validation;
    Student-t interval over seeds. One seed has no interval: ``inconclusive``.
    """
    from ulr import verdict as V
    from ulr.quantity import Quantity
    t = seeds_table(experiments)
    piv = t.pivot_table(index="seed", columns="model", values="improvement")
    others = [m for m in piv.columns if m != "naive-mf"]
    if "naive-mf" not in piv.columns or not others:
        raise UlrError("the verdict compares naive MF with a debiased model: run both.")
    best = max(others, key=lambda m: piv[m].mean())
    diffs = (piv[best] - piv["naive-mf"]).to_numpy()
    basis = f"paired test-MSE improvement, {LABELS[best]} - naive MF, over seeds"
    m, lo, hi, se = V.paired_t_interval(diffs, level)
    if len(diffs) < 2:
        return V.Verdict("inconclusive", f"In one simulated world {LABELS[best]} improves on "
                         f"naive MF by {Quantity('points', m).text()} of the test variance, "
                         "but one world has no "
                         "interval.", basis,
                         reasons=(V.Reason("single_run", "A single seed."),),
                         to_settle="average several seeds", estimate={"delta": m, "seeds": 1})
    return V.difference_verdict(m, lo, hi, a="naive MF", b=LABELS[best],
                                quantity="test-MSE improvement", basis=basis, n=len(diffs),
                                unit="seeds (simulated worlds)", level=level, pct=True)
