"""Debiased recommendation: naive MF vs propensity MF vs CausE on ratings missing not at random."""

from dataclasses import asdict, replace

import pandas as pd
import streamlit as st

from pages import _ui as ui
from ulr import theme
from ulr.errors import UlrError
from ulr.quantity import show
from ulr.recommend.data import simulate_mnar
from ulr.recommend.experiment import (CRITERIA, LABELS, N_SEEDS, compare_seeds,
                                      experiment_grids, learning_curves_figure, results_figure,
                                      results_table, seeds_table, summarize_runs)
from ulr.recommend.models import MODELS, MFConfig, train

st.title("Debiased recommendation")
st.caption(
    "Users rate what they chose to look at, and they look at what they expect to like: the "
    "ratings a recommender learns from are missing not at random. Here a simulated world "
    "knows every rating. A logging policy exposes items more often the more the user likes "
    "them; about 3% of the ratings come from uniformly random exposure. Three matrix "
    "factorizations learn from the same data and are scored on uniformly sampled ratings.")


@ui.cache_data(show_spinner=False, max_entries=16)
def _data(world: tuple):
    return simulate_mnar(**dict(world))


@ui.cache_data(show_spinner=False, max_entries=512)
def _run(world: tuple, model: str, config: tuple, exposure: str,
         _should_stop=None) -> pd.DataFrame:
    return train(_data(world), model, MFConfig(**dict(config)), exposure=exposure,
                 should_stop=_should_stop).history


PROPENSITIES = ["naive-bayes", "true"]
SEEDS = N_SEEDS  # worlds averaged by default, as the CLI: the verdict needs a spread
with st.form("recs_form"):
    st.markdown("**World**")
    c = st.columns(4)
    users = int(c[0].number_input("Users", 20, 5000, ui.url_number("users", 400, 20, 5000),
                                  step=20, key="rec_users"))
    items = int(c[1].number_input("Items", 20, 5000, ui.url_number("items", 300, 20, 5000),
                                  step=20, key="rec_items"))
    rank = int(c[2].number_input("Latent rank", 1, 50, 5, key="rec_rank"))
    observed = c[3].number_input("Exposed share of pairs", 0.005, 0.5, 0.05, step=0.01,
                                 format="%.3f", key="rec_obs")
    c = st.columns(4)
    alpha = c[0].number_input("Exposure log-odds per star", 0.0, 5.0,
                              ui.url_number("alpha", 1.0, 0.0, 5.0, kind=float), step=0.1,
                              key="rec_alpha", help="0 = missing at random.")
    gamma = c[1].number_input("Exposure log-odds per sd of popularity", 0.0, 5.0, 0.5,
                              step=0.1, key="rec_gamma")
    random_share = c[2].number_input("Randomized share of the training ratings", 0.005, 0.5,
                                     0.03, step=0.01, format="%.3f", key="rec_random")
    seed = int(c[3].number_input("Seed", 0, 10**6, ui.url_number("seed", 0, 0, 10**6),
                                 key="rec_seed"))
    st.markdown("**Training** (numpy mini-batch SGD with momentum; a small grid per model)")
    c = st.columns(4)
    factors = int(c[0].number_input("Factors", 1, 100, 8, key="rec_factors"))
    epochs = int(c[1].number_input("Epochs", 1, 500, ui.url_number("epochs", 40, 1, 500),
                                   key="rec_epochs"))
    lr = c[2].number_input("Learning rate", 0.001, 1.0, 0.05, format="%.3f", key="rec_lr")
    batch = int(c[3].number_input("Batch size", 8, 8192, 256, step=32, key="rec_batch"))
    c = st.columns(4)
    models = c[0].multiselect("Models", list(MODELS), key="rec_models", format_func=LABELS.get,
                              default=ui.url_options("models", MODELS, MODELS))
    exposure = c[1].selectbox("Exposure model", PROPENSITIES, key="rec_prop",
                              index=ui.url_index("exposure", PROPENSITIES),
                              format_func={"naive-bayes": "naive Bayes on the random slice",
                                           "true": "true (simulator's) exposure"}.get,
                              help="How likely each rating was to be observed: propensity MF "
                                   "divides by it.")
    norm = c[2].selectbox("CausE tie", ["l2", "l1"], key="rec_norm",
                          format_func={"l2": "squared L2", "l1": "L1"}.get)
    n_seeds = int(c[3].number_input("Simulated worlds (seeds)", 1, 10,
                                    ui.url_number("runs", SEEDS, 1, 10), key="rec_seeds",
                                    help="Worlds seed, seed + 1, ...: the verdict compares the "
                                         "models over them, with an interval (one world has "
                                         "none). Tables and charts show the first."))
    submitted = st.form_submit_button("Train and compare", type="primary")
ui.set_url_params(users=users, items=items, alpha=float(alpha), seed=seed, epochs=epochs,
                  models=list(models), exposure=exposure, runs=n_seeds)

world = (("users", users), ("items", items), ("rank", rank),
         ("observed_fraction", float(observed)), ("alpha", float(alpha)),
         ("gamma", float(gamma)), ("random_share", float(random_share)), ("seed", seed))
base = MFConfig(factors=factors, epochs=epochs, learning_rate=float(lr), batch_size=batch,
                discrepancy_norm=norm, seed=seed)
settings = (world, tuple(models), exposure, tuple(asdict(base).items()), n_seeds)


def _worlds(world: tuple, base: MFConfig, n: int) -> list:
    """``(world, base)`` of each seed: seed, seed + 1, ... for both the data and training."""
    w, s = dict(world), int(dict(world)["seed"])
    return [(tuple({**w, "seed": s + i}.items()), replace(base, seed=s + i)) for i in range(n)]

if submitted:
    with ui.user_errors("Cannot train: "):
        if not models:
            raise UlrError("choose at least one model.")
        worlds = _worlds(world, base, n_seeds)
        total = n_seeds * sum(len(g) for g in experiment_grids(models, base).values())
        with ui.cancellable() as stop, st.status("Training…", expanded=True) as status:
            st.write("Simulating the ratings…")
            bar = st.progress(0.0)
            done = 0
            for i, (world_i, base_i) in enumerate(worlds):
                _data(world_i)
                for m, grid in experiment_grids(models, base_i).items():
                    for r, cfg in enumerate(grid):
                        _run(world_i, m, tuple(asdict(cfg).items()), exposure,
                             _should_stop=stop)
                        done += 1
                        bar.progress(done / total, text=f"world {i + 1} of {n_seeds}: "
                                                        f"{LABELS[m]}, run {r + 1} of {len(grid)}")
            status.update(label=f"Trained {total} runs", state="complete", expanded=False)
        ui.submitted("recs_form", settings)

last = ui.submitted("recs_form")
if last is None:
    st.info("Set up the world and press **Train and compare** (the defaults take a few "
            "seconds).")
    st.stop()

world_k, models_k, prop_k, base_k, seeds_k = last
exp = seeds = None
with ui.user_errors("Cannot show the results: "), ui.cancellable() as stop:
    exps = []
    for world_i, base_i in _worlds(world_k, MFConfig(**dict(base_k)), seeds_k):
        runs = [(m, r, cfg, _run(world_i, m, tuple(asdict(cfg).items()), prop_k,
                                 _should_stop=stop))
                for m, grid in experiment_grids(models_k, base_i).items()
                for r, cfg in enumerate(grid)]
        exps.append(summarize_runs(_data(world_i), runs, exposure=prop_k))
    seeds = compare_seeds(exps)
    exp = seeds.first
if exp is None:
    st.stop()
if seeds.verdict is not None:
    ui.show_verdict(seeds.verdict, key="recs")

s = exp.summary
m = st.columns(4)
m[0].metric("Mean logged rating", show('number', s['mean_rating_mnar']),
            f"{show('number', s['mean_rating_mnar'] - s['mean_rating_uniform'], signed=True)} vs all pairs",
            delta_color="off", delta_arrow="off")
m[1].metric("Logged (MNAR) ratings", f"{s['mnar_ratings']:,}")
m[2].metric("Randomized ratings", f"{s['random_ratings']:,}",
            f"{show('rate', s['random_share'])} of training",
            delta_color="off", delta_arrow="off")
m[3].metric("Test ratings (uniform)", f"{s['test_ratings']:,}",
            f"variance {show('number', s['test_variance'])}", delta_color="off", delta_arrow="off")

st.subheader("Results")
table = results_table(exp)


def _shown(v, col: str) -> str:
    if isinstance(v, str):
        return v
    if col.startswith("improvement"):
        return f"{v:.1%}"
    return theme.format_number(v, 0 if float(v).is_integer() else 3)


# One column per method, one row per measure: the long text cells (criterion,
# setting) wrap inside three columns instead of running off the right edge.
wide = pd.DataFrame({r["method"]: [_shown(r[c], c) for c in table.columns[1:]]
                     for _, r in table.iterrows()}, index=list(table.columns[1:]))
ui.dataframe(wide, width="stretch", key="rec_table",
             height=38 * (len(wide) + 1) + 4,
             column_config={"_index": st.column_config.TextColumn("measure", width="medium")})
st.caption(
    "Improvement = 1 − MSE / Var(test ratings): the share of the error of predicting the test "
    "mean that a model removes (negative = worse than that constant). *Best on validation* "
    "picks the grid run and epoch by each model's own criterion, as a practitioner would; "
    "*best on test* is an oracle. A gap between them means the validation signal misleads — "
    "naive MF's biased validation keeps asking for more training while its test error grows.")
if seeds_k > 1:
    per_seed = seeds_table(seeds.experiments).pivot(index="seed", columns="model", values="improvement")
    per_seed = per_seed.rename(columns=LABELS)
    per_seed.index = [f"world {i + 1} (seed {int(dict(world_k)['seed']) + i})"
                      for i in per_seed.index]
    per_seed.index.name = "simulated world"
    ui.dataframe(per_seed.style.format("{:.1%}"), width="stretch", key="rec_seeds_table")
    st.caption("Test-MSE improvement (best on validation) in each simulated world; the "
               "verdict above compares the models over these worlds. The other tables and "
               "charts show the first world.")
fig_bar = results_figure(exp)
st.plotly_chart(fig_bar, key="rec_bar")
fig_curves = learning_curves_figure(exp)
st.plotly_chart(fig_curves, key="rec_curves")
st.caption("Validation criteria: " + "; ".join(f"{LABELS[k]} — {CRITERIA[k]}"
                                               for k in models_k) + ". Diamonds mark the "
           "epoch chosen on validation.")
c1, c2 = st.columns(2)
with c1:
    ui.download_csv(table, "debiased_recs_results.csv", "Download results (CSV)", key="rec_csv")
with c2:
    ui.download_csv(exp.history, "debiased_recs_learning_curves.csv",
                    "Download learning curves (CSV)", key="rec_curves_csv")
ui.add_to_report("Debiased recommendation: test MSE improvement", fig=fig_bar, table=table,
                 settings={**dict(world_k), "models": list(models_k), "propensity": prop_k,
                           **dict(base_k)},
                 evidence=seeds.evidence, key="recs", verdict=seeds.verdict, simulated=True)
