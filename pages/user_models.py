"""User models: which click model fits the log, compared on held-out sessions (#27).

All computation is in :mod:`ulr.clickmodels`; this page picks the models, runs
them inside a status box and shows the verdict first, then the table and each
model's examination-by-rank curve beside the PBM estimate of the Position bias page.
"""

import streamlit as st

from pages import _ui as ui
from ulr import propensity, store
from ulr.clickmodels import LABELS, MODELS, evaluate, plots, sessions
from ulr.errors import UlrError
from ulr.propensity import aggregate

st.title("User models")
st.caption(
    "Which user model explains the clicks? Each click model is fitted on the training "
    "sessions and scored on held-out ones by log-likelihood per session (higher is better); "
    "a model whose gap to the best has a bootstrap interval containing 0 is within noise of it. "
    "Definitions: docs/clickmodels.md.")



@ui.cache_data(show_spinner=False, max_entries=32)
def _compare(content_hash: str, name: str, models: tuple, fraction: float, bootstrap: int,
             seed: int, _should_stop=None):
    """("ok", Comparison) or ("error", sentence); keyed by content hash + settings."""
    lg = store.open_dataset(name, cur=store.cursor())
    try:
        S = sessions.collect(aggregate.scan_of(lg), test_fraction=fraction, seed=seed)
        return "ok", evaluate.compare(S, list(models), n_bootstrap=bootstrap, seed=seed,
                                      test_fraction=fraction, refit_intervals=False,
                                      should_stop=_should_stop)
    except UlrError as exc:
        return "error", str(exc)


@ui.cache_data(show_spinner=False, max_entries=32)
def _pbm_theta(content_hash: str, name: str, positions: int):
    lg = store.open_dataset(name, cur=store.cursor())
    try:
        return propensity.estimate(lg, method="em", positions=positions).theta
    except UlrError:
        return None


def _settings():
    """The controls, pre-set from the shareable URL (models, test, boot, seed)."""
    models = st.multiselect("Models", list(MODELS),
                            default=ui.url_options("models", list(MODELS), list(MODELS)),
                            key="um_models", format_func=lambda m: LABELS[m],
                            help="PBM and UBM: examination by rank (and distance to the last "
                                 "click); cascade, DCM, DBN, SDBN: users scan down and may stop "
                                 "after a click.")
    c1, c2, c3 = st.columns(3)
    fraction = c1.slider("Held-out share of sessions", 0.1, 0.5,
                         ui.url_number("test", 0.2, 0.1, 0.5, kind=float), 0.05, key="um_test")
    bootstrap = c2.number_input("Bootstrap replicates", 0, 500,
                                ui.url_number("bootstrap", 50, 0, 500), 10, key="um_boot",
                                help="Over held-out sessions, for the gaps' intervals.")
    seed = c3.number_input("Seed", 0, 10**6, ui.url_number("seed", 0, 0, 10**6), key="um_seed")
    if bootstrap == 1:
        st.warning("One bootstrap replicate cannot make an interval; using none.")
        bootstrap = 0
    if not models:
        st.info("Pick one or more models to compare.")
        st.stop()
    return tuple(models), float(fraction), int(bootstrap), int(seed)


def _verdict(res) -> None:
    ui.show_verdict(res.verdict, key="user_models")
    st.caption(f"Basis: {res.verdict.basis}.")


log = ui.current_log()
info = log.info
if not info.has("session_id"):
    ui.dead_end(f"The dataset {info.name!r} has no session column, so there is no result list "
                "whose clicks can be read in rank order, which every click model needs; map a "
                "session id in the Data page's column mapping.",
                label="Map a session id in the Data page's column mapping")
    st.stop()
models, fraction, bootstrap, seed = _settings()
kind, res = "error", "The click models did not run."
held, value = ui.cached_only(lambda: _compare(info.content_hash, info.name, models, fraction,
                                               bootstrap, seed))
if held:   # fitted before: no progress box (opening one pauses the run 50 ms)
    kind, res = value
else:
    with ui.user_errors(), ui.cancellable() as stop, \
            st.status(f"Fitting {len(models)} click models on {info.name!r}…",
                      expanded=False) as status:
        kind, res = _compare(info.content_hash, info.name, models, fraction, bootstrap, seed,
                             _should_stop=stop)
        if kind == "ok":
            status.update(label=f"Fitted {len(models)} click models on {info.name!r} in "
                                f"{res.seconds:.1f} s", state="complete")
        else:
            status.update(label="Could not fit the click models", state="error")
if kind != "ok":
    st.error(res)
    st.stop()
_verdict(res)
table = res.table()
st.dataframe(table, hide_index=True, width="stretch", key="um_table",
             column_config={c: st.column_config.NumberColumn(format="%.4f")
                            for c in table.columns if c not in ("model", "within noise")})
pbm = _pbm_theta(info.content_hash, info.name, res.scores[0].examination.shape[0])
truth = log.true_theta()  # simulated logs record the average examination per rank
fig = plots.examination_figure(res, pbm, truth=truth)
st.plotly_chart(fig, width="stretch", key="um_exam_chart")
st.caption(f"Evidence: {res.train_sessions:,} training and {res.test_sessions:,} held-out "
           "sessions. Curves are each model's average chance of examining a rank over the "
           "training sessions, relative to rank 1; ✕ is the Position bias page's EM estimate.")
c1, c2 = st.columns([1, 4])
with c1:
    ui.download_csv(table, f"user_models_{info.name}.csv", "Download CSV", key="um_download")
with c2:
    ui.add_to_report("User models", fig=fig, table=table, key="user_models",
                     settings={"dataset": info.name, "models": list(models),
                               "test_fraction": fraction, "bootstrap": bootstrap, "seed": seed},
                     caveats=[r.message for r in res.verdict.reasons],
                     evidence={"sessions": res.train_sessions + res.test_sessions,
                               "held_out_sessions": res.test_sessions},
                     takeaway=res.verdict.takeaway, verdict=res.verdict)
ui.set_url_params(models=list(models), test=fraction, bootstrap=bootstrap, seed=seed)
