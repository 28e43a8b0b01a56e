"""Bandit lab: cascading bandits learning to rank, with live regret curves and theory."""

import time

import pandas as pd
import streamlit as st

from pages import _ui as ui
from pages._bandit.replay import replay_section
from ulr.bandits.envs import ENVIRONMENTS, make_env
from ulr.bandits.plots import lab_figure
from ulr.bandits.policies import ALGORITHMS
from ulr.bandits.run import LabRun
from ulr.bandits.simulate import BanditLab
from ulr.errors import NeedsRandomizedRows, UlrError
from ulr.quantity import show
from ulr.text import parse_numbers

TICK = 0.25      # seconds between redraw requests of the live chart (a tick that runs
                 # longer is followed at once by the next)
LIVE_POINTS = 150  # points per curve while running (400 in the finished chart)
run = LabRun(st.session_state, prefix=ui.keys.BANDIT_RUN)
RUNS_KEPT = 32  # runs a refresh can find again (the server's most recent ones)


@st.cache_resource(show_spinner=False)
def _kept_runs() -> dict:
    """Every session's lab by run id (the link's ``run``), most recent last: a refresh
    or a shared link finds the run again, as it stood."""
    return {}


def _keep(lab) -> str:
    import uuid
    kept = _kept_runs()
    rid = uuid.uuid4().hex[:16]
    kept[rid] = lab
    for old in list(kept)[:-RUNS_KEPT]:
        kept.pop(old, None)
    return rid


def _restore() -> None:
    """Once per session: the run the link names, copied and stopped where it stands."""
    import copy
    if st.session_state.get(ui.keys.BANDIT_RUN + "checked"):
        return
    st.session_state[ui.keys.BANDIT_RUN + "checked"] = True
    rid = ui.url_param("run", "")
    lab = _kept_runs().get(rid) if rid else None
    if lab is not None and run.lab is None:
        with run.lock:
            run.adopt(copy.deepcopy(lab))
        st.session_state[ui.keys.BANDIT_RUN + "id"] = rid


_restore()

st.title("Bandit lab")
st.caption(
    "Could an online learner rank better than the logged ranker, and how fast would it learn? "
    "Simulate cascading bandits (Kveton et al., ICML 2015): the user scans the list from the "
    "top and clicks the first attractive item. The chart shows the cumulative expected regret "
    "(clicks lost against the best list) as the runs progress: the line is the mean over runs, "
    "the band spans the 10th–90th percentile of the runs.")

ENV_HELP = {
    "kveton": "K items with attraction p, the other L − K with p − δ (Kveton et al. 2015).",
    "linear": "Items with multi-hot tags; attraction is linear in the tags (Zong et al. 2016). "
              "p is the mean attraction.",
    "data": "Attraction of the most shown documents of the selected dataset: CTR corrected by "
            "position bias θ (default: CTR ratios of its randomized rows).",
}
ALGO_HELP = ("ucb1 / ts: plain bandits, one per position (ranked bandits; with K = 1 exactly "
             "UCB1 / Thompson sampling). cascade-*: learn from cascade feedback (Kveton et al. "
             "2015, Zong et al. 2016).")


def _theta(text: str):
    if not text.strip():
        return None
    return parse_numbers(text, what="θ")


@ui.cache_data(show_spinner=False, max_entries=16)
def _data_env(content_hash: str, name: str, items: int, k: int, theta):
    return make_env("data", items=items, positions=k, theta=theta, log=ui.current_log())


# ---------------------------------------------------------------- settings
with st.form("bl_form"):
    c1, c2, c3, c4 = st.columns(4)
    env_name = c1.selectbox("Environment", ENVIRONMENTS, key="bl_env",
                            index=ui.url_index("env", ENVIRONMENTS),
                            help=" ".join(f"{k}: {v}" for k, v in ENV_HELP.items()))
    items = int(c2.number_input("Items L", 2, 5000, ui.url_number("items", 16, 2, 5000),
                                key="bl_items"))
    k = int(c3.number_input("List length K", 1, 20, ui.url_number("positions", 2, 1, 20), key="bl_k"))
    seed = int(c4.number_input("Seed", 0, 10**6, ui.url_number("seed", 0, 0, 10**6),
                               key="bl_seed"))
    c1, c2, c3, c4 = st.columns(4)
    p = c1.number_input("p (attraction)", 0.01, 1.0, ui.url_number("p", 0.2, 0.01, 1.0, kind=float),
                        step=0.05, key="bl_p")
    delta = c2.number_input("δ (gap, kveton)", 0.01, 1.0,
                            ui.url_number("delta", 0.15, 0.01, 1.0, kind=float), step=0.05,
                            key="bl_delta")
    d = int(c3.number_input("Tags d (linear)", 1, 100, ui.url_number("d", 10, 1, 100),
                            key="bl_d"))
    theta_text = c4.text_input("θ by position (data, optional)", "", key="bl_theta",
                               help="Relative examination per position, e.g. 1, 0.5, 0.33. "
                                    "Empty: CTR ratios of the dataset's randomized rows.")
    algorithms = st.multiselect("Algorithms", ALGORITHMS,
                                default=ui.url_options("algorithms", ALGORITHMS,
                                                       ["cascade-ucb1", "cascade-klucb",
                                                        "cascade-ts"],
                                                       cap="ULR_MAX_METHODS",
                                                       what="algorithms"),
                                max_selections=ui.limit("ULR_MAX_METHODS"),
                                key="bl_algos", help=ALGO_HELP)
    c1, c2 = st.columns(2)
    steps = int(c1.number_input("Steps", 100, max(100, min(1_000_000, ui.limit("ULR_MAX_STEPS"))),
                                ui.url_number("steps", 20_000, 100, 1_000_000,
                                              cap="ULR_MAX_STEPS", what="steps"), step=1000,
                                key="bl_steps"))
    runs = int(c2.number_input("Runs", 1, min(100, ui.limit("ULR_MAX_RUNS")),
                               ui.url_number("runs", 10, 1, 100, cap="ULR_MAX_RUNS",
                                             what="runs"), key="bl_runs",
                               help="Independent runs, simulated together as a batch."))
    start = st.form_submit_button("Start", type="primary", icon=":material/play_arrow:")
ui.set_url_params(env=env_name, algorithms=list(algorithms), items=items, positions=k, p=float(p),
                  delta=float(delta), d=d, steps=steps, runs=runs, seed=seed)

if start:
    try:
        if env_name == "data":
            log = ui.current_log()
            env = _data_env(log.info.content_hash, log.info.name, items, k, _theta(theta_text))
        else:
            if theta_text.strip():
                raise UlrError("θ applies to the data environment only.")
            env = make_env(env_name, items=items, positions=k, p=p, delta=delta, n_features=d, seed=seed)
        new_lab = BanditLab(env, tuple(algorithms), steps, runs=runs, seed=seed)
        run.start(new_lab)
        st.session_state[ui.keys.BANDIT_RUN + "id"] = _keep(new_lab)
    except UlrError as exc:
        if isinstance(exc, NeedsRandomizedRows):
            ui.dead_end("Cannot start the data environment: turning its clicks into attraction "
                        "needs position bias θ, and this log has no rows shown in random order "
                        "to estimate it from. Type θ by position above, or, if every list was "
                        "shown in random order, declare it in the Data page's mapping.",
                        label="Declare it in the Data page's mapping")
        else:
            st.error(f"Cannot start: {ui.literal(exc)}")
lab_env = run.lab.env if run.lab is not None else None
if lab_env is not None and lab_env.name == "data":
    st.caption(f"Data environment: attraction of the {lab_env.n_items} most shown documents of "
               f"“{ui.shown(lab_env.params.get('dataset'))}” = clicks / expected examinations, "
               f"with θ from {lab_env.params.get('theta_from')}.")

lab, status = run.lab, run.status
if lab is not None and st.session_state.get(ui.keys.BANDIT_RUN + "id"):
    ui.set_url_params(run=st.session_state[ui.keys.BANDIT_RUN + "id"])
elif lab is None and "run" in st.query_params:  # reset: the link no longer names a run
    st.session_state.pop(ui.keys.BANDIT_RUN + "id", None)
    del st.query_params["run"]

# ---------------------------------------------------------------- controls
def controls(state: str, lab) -> None:
    """Pause / Resume / Reset for the run's status ``state``. The live fragment draws them
    on each of its script runs, every tick included: drawn only by the app's runs, they
    kept the state of the last one while a running run has ticks only (a Pause left off
    after Resume stayed off until a refresh). They act in callbacks, before the script
    runs, so they are drawn for the state their click made."""
    row = st.container(horizontal=True)
    row.button("Pause", key="bl_pause", icon=":material/pause:", disabled=state != "running",
               on_click=run.pause)
    row.button("Resume", key="bl_resume", icon=":material/play_arrow:",
               disabled=state != "paused", on_click=run.resume)
    row.button("Reset", key="bl_reset", icon=":material/restart_alt:", disabled=lab is None,
               on_click=run.reset)


# Layout: controls and chart (the live fragment), results, replay. The fragment runs
# last so that every click of this script run (replay, ...) is handled before it may
# finish the run and rerun the app.
chart_box = st.container()
results_box = st.container()


# ---------------------------------------------------------------- live chart
@st.fragment(run_every=TICK if status == "running" else None)
def live():
    with run.lock:  # controls, progress, chart and table of one step
        # finished, or a click handled in this run changed it: the page (timer, results)
        # was set up for ``status``, so the whole app runs again for the new state
        if run.tick() or run.status != status:
            st.rerun(scope="app")
        lab, state = run.lab, run.status
        controls(state, lab)
        if lab is None:
            st.info("Choose an environment and algorithms, then press **Start**. With the "
                    "defaults (the Kveton et al. setting L = 16, K = 2, p = 0.2, δ = 0.15) "
                    "CascadeKL-UCB should end with well under half the regret of CascadeUCB1.")
            return
        share, text = lab.progress, (f"{state}: step {lab.t:,} of {lab.steps:,} · elapsed "
                                     f"{show('duration', run.elapsed())} (simulation {show('duration', lab.seconds)})")
        t0 = time.perf_counter()
        fig = lab_figure(lab, points=LIVE_POINTS if state == "running" else 400)
    st.progress(share, text=text)
    st.plotly_chart(fig, key="bl_chart")
    run.drew(time.perf_counter() - t0)


# ---------------------------------------------------------------- results
def results(lab):
    res = lab.results()
    verdict = lab.verdict if lab.t else None  # set as the lab advanced
    if verdict is not None:
        ui.show_verdict(verdict, key="bandit_lab")
    table = pd.DataFrame({
        "algorithm": res["algorithm"],
        "final regret": [f"{show('number', m)} ± {show('number', s)}" for m, s in
                         zip(res["final_regret_mean"], res["final_regret_std"])],
        "regret mean": res["final_regret_mean"],
        "regret sd": res["final_regret_std"],
        "steps": res["steps"],
        "runs": res["runs"],
        "wall time (s)": res["seconds"],
        "steps per second": res["steps_per_second"],
    })
    st.subheader("Results" if status == "done" else f"Results so far (paused at step {lab.t:,})")
    ui.dataframe(table, hide_index=True, width="stretch", column_config={
        "regret mean": st.column_config.NumberColumn(format="%.1f"),
        "regret sd": st.column_config.NumberColumn(format="%.1f"),
        "wall time (s)": st.column_config.NumberColumn(format="%.2f"),
        "steps per second": st.column_config.NumberColumn(format="%,.0f")})
    env = lab.env
    notes = []
    if env.name == "kveton":
        notes.append("Dotted: asymptotic lower bound of Kveton et al. (2015, Thm. 4), "
                     "(L − K) δ (1 − p)^(K−1) / KL(p − δ, p) · log n")
    if "ucb1" in lab.algorithms and env.k == 1:
        notes.append("Dashed: gap-dependent upper bound of UCB1, Σ Δᵢ (⌈8 ln n / Δᵢ²⌉ − 1 + "
                     "2ζ(3)) (derivation in ulr.bandits.bounds)")
    elif "ucb1" in lab.algorithms:
        notes.append("The UCB1 upper bound is drawn for K = 1 only (the plain bandit)")
    st.caption(" ".join(["Wall time and steps per second are per algorithm, for all runs at "
                         "once."] + [n + "." for n in notes]))
    ui.download_csv(table.drop(columns=["final regret"]), "bandit_lab_results.csv",
                    "Download results (CSV)", key="bl_csv")
    ui.add_to_report(f"Bandit lab: {env.name} environment (L={env.n_items}, K={env.k})",
                     fig=lab_figure(lab), table=table,
                     settings={"environment": env.describe(), "algorithms": list(lab.algorithms),
                               "steps": lab.steps, "runs": lab.runs, "seed": lab.seed},
                     evidence={"runs": lab.runs, "steps per run": lab.steps},
                     caveats=[n + "." for n in notes], key="bandit_lab",
                     verdict=verdict, simulated=env.name != "data")


# ---------------------------------------------------------------- replay
replay_section()


if lab is not None and status in ("paused", "done"):
    with results_box:
        results(lab)
with chart_box:
    live()
