"""User models: which click model fits the log, compared on held-out sessions (#27).

All computation is in :mod:`ulr.clickmodels`; this page picks the models, runs
them inside a status box and shows the verdict first, then the table and each
model's examination-by-rank curve beside the PBM estimate of the Position bias page.
"""

import streamlit as st

from pages import _ui as ui
from pages._ui.identification import show_identification
from ulr import propensity, theme
from ulr.data import catalog
from ulr.clickmodels import DEFAULT, LABELS, MODELS, evaluate, plots, sessions
from ulr.errors import UlrError
from ulr.data.scan import scan_of
from ulr.data.summary import true_theta
from ulr.quantity import show
st.title("User models")
st.caption(
    "Which user model explains the clicks? Each click model is fitted on the training "
    "sessions and scored on held-out ones by log-likelihood per session (higher is better); "
    "a model whose gap to the best has a bootstrap interval containing 0 is within noise of it. "
    "Definitions: docs/clickmodels.md.")



@ui.cache_data(show_spinner=False, max_entries=32)
def _compare(content_hash: str, name: str, models: tuple, fraction: float, bootstrap: int,
             seed: int, prior: str = "auto", _should_stop=None):
    """("ok", Comparison) or ("error", sentence); keyed by content hash + settings."""
    lg = catalog.open_dataset(name, cur=catalog.cursor())
    try:
        S = sessions.collect(scan_of(lg), test_fraction=fraction, seed=seed)
        return "ok", evaluate.compare(S, list(models), n_bootstrap=bootstrap, seed=seed,
                                      test_fraction=fraction, refit_intervals=False,
                                      prior=prior, should_stop=_should_stop)
    except UlrError as exc:
        lift = (" To do so, move “Held-out share of sessions”."
                if getattr(exc, "option", None) == "test_fraction" else "")
        return "error", str(exc) + lift


@ui.cache_data(show_spinner=False, max_entries=32)
def _pbm_theta(content_hash: str, name: str, positions: int):
    lg = catalog.open_dataset(name, cur=catalog.cursor())
    try:
        return propensity.estimate(lg, method="em", positions=positions,
                                   weigh_facts=False).theta  # theta only
    except UlrError:
        return None


def _settings():
    """The controls, pre-set from the shareable URL (models, test, boot, seed, prior)."""
    models = st.multiselect("Models", list(MODELS),
                            default=ui.url_options("models", list(MODELS), list(DEFAULT)),
                            key="um_models", format_func=lambda m: LABELS[m],
                            help="PBM and UBM: examination by rank (and distance to the last "
                                 "click); cascade, DCM, DBN, SDBN: users scan down and may stop "
                                 "after a click.")
    c1, c2, c3 = st.columns(3)
    fraction = c1.slider("Held-out share of sessions", 0.1, 0.5,
                         ui.url_number("test", 0.2, 0.1, 0.5, kind=float), 0.05, key="um_test")
    bootstrap = c2.number_input("Bootstrap replicates", 0, 500,
                                ui.url_number("bootstrap", evaluate.DEFAULT_BOOTSTRAP, 0, 500),
                                10, key="um_boot",
                                help="Over held-out sessions, for the gaps' intervals.")
    seed = c3.number_input("Seed", 0, 10**6, ui.url_number("seed", 0, 0, 10**6), key="um_seed")
    prior = _prior()
    if bootstrap == 1:
        st.warning("One bootstrap replicate cannot make an interval; using none.")
        bootstrap = 0
    if not models:
        st.info("Pick one or more models to compare.")
        st.stop()
    return tuple(models), float(fraction), int(bootstrap), int(seed), prior


PRIORS = {"auto": "Centred on the pooled estimate, strength from the data (default)",
          "fixed": "Fixed pseudo-counts", "none": "No prior (maximum likelihood)"}


def _prior() -> str:
    """The prior as :func:`ulr.clickmodels.prior.parse` reads it: auto, none or "A,B"."""
    kinds = list(PRIORS)
    url = str(ui.url_param("prior", "auto"))
    kind = "fixed" if "," in url else (url if url in kinds else "auto")
    c1, c2, c3 = st.columns([2, 1, 1])
    kind = c1.selectbox("Prior on every probability", kinds, index=kinds.index(kind),
                        format_func=PRIORS.get, key="um_prior",
                        help="Pseudo-clicks and pseudo-results added to every parameter's "
                             "counts, so a rarely seen result is not judged on one or two "
                             "sessions. One click in two results is PyClick's choice.")
    if kind != "fixed":
        return kind
    try:
        a0, b0 = (min(max(float(x), 0.0), 1e6) for x in url.split(","))
    except ValueError:  # not two numbers in the link: PyClick's one click in two
        a0, b0 = 1.0, 1.0
    a = c2.number_input("Pseudo-clicks", 0.0, 1e6, a0, 0.5, key="um_prior_a")
    b = c3.number_input("Pseudo-skips", 0.0, 1e6, b0, 0.5, key="um_prior_b")
    if a + b <= 0:
        st.warning("Pseudo-clicks and pseudo-skips cannot both be 0; using no prior.")
        return "none"
    # the prior as the link and ulr.clickmodels.prior parse it ("a,b"), not text for a reader
    return f"{a:g},{b:g}"


def _verdict(res) -> None:
    ui.show_verdict(res.verdict, key="user_models")
    st.caption(f"Basis: {res.verdict.basis}.")


log = ui.current_log()
info = log.info
if not info.has("session_id"):
    ui.dead_end(f"The dataset '{ui.shown(info.name)}' has no session column, so there is no "
                "result list whose clicks can be read in rank order, which every click model needs; map a "
                "session id in the Data page's column mapping.",
                label="Map a session id in the Data page's column mapping")
    st.stop()
models, fraction, bootstrap, seed, prior = _settings()
show_identification(info, key="um")
kind, res = "error", "The click models did not run."
held, value = ui.cached_only(lambda: _compare(info.content_hash, info.name, models, fraction,
                                               bootstrap, seed, prior))
if held:   # fitted before: no progress box (opening one pauses the run 50 ms)
    kind, res = value
else:
    with ui.user_errors(), ui.cancellable() as stop, \
            st.status(f"Fitting {len(models)} click models on '{ui.shown(info.name)}'…",
                      expanded=False) as status:
        kind, res = _compare(info.content_hash, info.name, models, fraction, bootstrap, seed,
                             prior, _should_stop=stop)
        if kind == "ok":
            status.update(label=f"Fitted {len(models)} click models on '{ui.shown(info.name)}' in "
                                f"{show('duration', res.seconds)}", state="complete")
        else:
            status.update(label="Could not fit the click models", state="error")
if kind != "ok":
    st.error(ui.literal(res))
    st.stop()
_verdict(res)
table = res.table()
ui.dataframe(theme.styled(table), hide_index=True, width="stretch", key="um_table")
pbm = _pbm_theta(info.content_hash, info.name, res.scores[0].examination.shape[0])
truth = true_theta(log)  # simulated logs record the average examination per rank
fig = plots.examination_figure(res, pbm, truth=truth)
st.plotly_chart(fig, width="stretch", key="um_exam_chart")
st.caption(f"Evidence: {res.train_sessions:,} training and {res.test_sessions:,} held-out "
           "sessions. Curves are each model's average chance of examining a rank over the "
           "training sessions, relative to rank 1; ✕ is the Position bias page's EM estimate. "
           "Prior: " + res.prior.get("text", "none") + ".")
freq_section = st.expander("By how often a result was seen in training", key="um_freq_open",
                           on_change="rerun")
with freq_section:
    if freq_section.open:  # drawn when opened: most first views never open it (issue 54)
        ui.dataframe(res.frequency_table(), hide_index=True, width="stretch", key="um_freq_table",
                     column_config={"log-likelihood / impression": st.column_config.NumberColumn(
                         format="%.4f"), "perplexity": st.column_config.NumberColumn(format="%.4f"),
                         "held-out impressions": st.column_config.NumberColumn(format="%d")})
        st.plotly_chart(plots.frequency_figure(res), width="stretch", key="um_freq_chart")
        st.caption("Held-out impressions grouped by how many training sessions showed the same "
                   "(query, document) pair: rarely seen pairs are where a model's estimates are "
                   "thinnest.")
c1, c2 = st.columns([1, 4])
with c1:
    ui.download_csv(table, f"user_models_{info.name}.csv", "Download CSV", key="um_download")
with c2:
    ui.add_to_report("User models", fig=fig, table=table, key="user_models",
                     settings={"dataset": info.name, "models": list(models),
                               "test_fraction": fraction, "bootstrap": bootstrap, "seed": seed,
                               "prior": res.prior.get("text", prior)},
                     caveats=list(res.caveats), evidence=res.evidence,
                     takeaway=res.verdict.takeaway, verdict=res.verdict)
ui.set_url_params(models=list(models), test=fraction, bootstrap=bootstrap, seed=seed,
                  prior=prior)
