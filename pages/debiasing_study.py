"""Debiasing study: does debiasing help on my labelled queries? (Joachims et al. 2017)."""

import hashlib
import os
import tempfile
from collections import OrderedDict
from pathlib import Path

import streamlit as st

from pages import _ui as ui
from ulr import propensity, study, theme
from ulr.clickmodels import records as click_records
from ulr.errors import UlrError
from ulr.quantity import setting, show
from ulr.study import simulate as S
from ulr.study.export import export_zip
from ulr.study.plots import study_figure, study_sweep_figure
from ulr.study.run import SWEEPS, parse_sweep, study_sweep, sweep_table

ui.ensure_app_run()  # a deep link's first run goes through app.py before any upload
st.title("Debiasing study")
st.caption(
    "The standard study of unbiased learning to rank (Joachims, Swaminathan & Schnabel, WSDM "
    "2017) on your own judged queries: a production ranker trained on 1% of the training "
    "queries shows the lists, clicks are simulated on your true grades under a user model, "
    "every learner trains on those clicks and is scored on held-out queries' grades. "
    "Intervals hold the spread over simulated runs and over test queries; no gain is "
    "promised.")

MAX_CACHED = 3  # each keeps its training features (an MSLR fold: about 1 GB)
TRUE = "true"


@st.cache_resource
def _results() -> OrderedDict:
    """Finished studies of this server, newest last (bounded below)."""
    return OrderedDict()


def _read(upload):
    """The upload as a LabelledSet, read from a temporary copy with its own name."""
    suffix = Path(upload.name).suffix or ".txt"
    fd, path = tempfile.mkstemp(prefix="ulr_study_", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(upload.getbuffer())
        return study.read_labels(path, name=upload.name)
    finally:
        os.unlink(path)


c1, c2 = st.columns(2)
up = c1.file_uploader("Labelled queries (LETOR / SVMlight text, CSV or Parquet)",
                      type=["txt", "svm", "svmlight", "letor", "libsvm", "dat", "csv",
                            "parquet", "pq"], key="dst_labels",
                      help="LETOR lines read “grade qid:Q 1:v 2:v … # comment”, as MSLR, "
                           "Yahoo and Istella ship them. A table needs query_id, doc_id, "
                           "relevance and feature_* columns.")
up_test = c2.file_uploader("Held-out queries (optional; else 30% of the queries, seeded)",
                           type=["txt", "svm", "svmlight", "letor", "libsvm", "dat", "csv",
                                 "parquet", "pq"], key="dst_test")

methods = [TRUE, *propensity.METHODS]
names = list(study.LEARNERS)
with st.form("dst_form"):
    a, b, c, d = st.columns(4)
    model = a.selectbox("User model", S.CLICK_MODELS, key="dst_model",
                        format_func=lambda m: click_records.get(m).description)
    eta = b.number_input("Severity of position bias η", 0.0, 3.0, 1.0, step=0.25,
                         key="dst_eta", help="Examination θₖ = (1/k)^η (PBM, UBM, trust bias).")
    sessions = int(c.number_input("Sessions per run", 100, 1_000_000, 10_000, step=1000,
                                  key="dst_sessions"))
    runs = int(d.number_input("Runs", 1, min(10, ui.limit("ULR_MAX_RUNS")),
                              min(3, ui.limit("ULR_MAX_RUNS")), key="dst_runs",
                              help="Independent simulations; the intervals hold their spread "
                                   "(one run: only the test queries')."))
    e, f, g = st.columns([3, 1, 1])
    chosen = e.multiselect("Learners", names, default=list(study.DEFAULT_LEARNERS),
                           key="dst_learners",
                           help="; ".join(f"{n}: {s.help}" for n, s in study.LEARNERS.items()))
    baseline = f.selectbox("Baseline", names, index=names.index(study.BASELINE),
                           key="dst_baseline")
    theta_by = g.selectbox("θ for IPW", methods, key="dst_theta",
                           help="The simulated θ, or θ estimated from each run's clicks.")
    h, i, j = st.columns([1, 1, 2])
    seed = int(h.number_input("Seed", 0, 10**6, 0, key="dst_seed"))
    sweep_over = i.selectbox("Sweep", ["none", *SWEEPS], key="dst_sweep",
                             format_func={"none": "no sweep", "eta": "over η",
                                          "sessions": "over sessions per run"}.get,
                             help="Run the study once per value, the same seeds otherwise: "
                                  "how strong a bias, or how much traffic, before IPW pays "
                                  "off?")
    sweep_text = j.text_input("Sweep values, separated by commas", "0, 0.5, 1, 2",
                              key="dst_sweep_values",
                              help="η values (0 or more), or sessions per run (at least 1), "
                                   "e.g. 1000, 10000, 100000.")
    submitted = st.form_submit_button("Run study", type="primary")

if submitted:
    with ui.user_errors("Cannot run the study: "):
        if up is None:
            raise UlrError("Upload a file of labelled queries first.")
        if not chosen:
            raise UlrError("Choose at least one learner.")
        sweep = parse_sweep(sweep_over, sweep_text) if sweep_over != "none" else None
        digest = hashlib.sha256(up.getbuffer()).hexdigest()[:16]
        digest_t = hashlib.sha256(up_test.getbuffer()).hexdigest()[:16] if up_test else ""
        key = (digest, digest_t, model, float(eta), sessions, runs, tuple(chosen), baseline,
               theta_by, seed, sweep and (sweep[0], tuple(sweep[1])))
        cache = _results()
        if key not in cache:
            data = _read(up)
            test = _read(up_test) if up_test is not None else None
            bar = st.progress(0.0, text="Starting…")

            def progress(done, total, msg):
                bar.progress(done / total, text=f"{msg} ({done}/{total})")

            options = dict(test=test, learners=chosen, baseline=baseline, model=model,
                           eta=float(eta), sessions=sessions, runs=runs,
                           propensity=theta_by, seed=seed, progress=progress,
                           keep_log=True)
            points = None
            with ui.cancellable() as stop:
                if sweep is None:
                    res = study.run_study(data, should_stop=stop, **options)
                else:
                    options.pop(sweep[0])
                    points = study_sweep(data, over=sweep[0], values=sweep[1],
                                         should_stop=stop, **options)
                    res = points[-1][1]
            bar.empty()
            cache[key] = (res, up.name, points and (sweep[0], points))
            while len(cache) > MAX_CACHED:
                cache.popitem(last=False)
        else:
            cache.move_to_end(key)
        ui.submitted("dst_form", key)

key = ui.submitted("dst_form")
got = _results().get(key) if key is not None else None
if got is None:
    st.info("Upload your labelled queries, choose the user model and the learners, and press "
            "**Run study**.")
else:
    res, file_name, swept = got
    s = res.settings
    if swept is not None:
        over, points = swept
        st.subheader("Sweep over η" if over == "eta" else "Sweep over sessions per run")
        sweep_df = sweep_table(points, over)
        sweep_fig = study_sweep_figure(sweep_df, over=over)
        st.plotly_chart(sweep_fig, key="dst_sweep_chart")
        st.caption(f"Each point is a whole study ({s['runs']} run(s), the same seeds); its "
                   f"band a {show('rate', s['level'])} interval over runs and test queries. The "
                   f"verdict "
                   f"column compares each learner with {s['baseline']} at that value.")
        shown_sweep = sweep_df.drop(columns=["metric"])
        ui.dataframe(shown_sweep.style.format(theme.styler_formats(shown_sweep)),
                     hide_index=True, width="stretch")
        ui.download_csv(sweep_df, "debiasing_study_sweep.csv",
                        "Download the sweep (CSV)", key="dst_sweep_csv")
        ui.add_to_report(f"Debiasing study on {file_name}: sweep over {over}", fig=sweep_fig,
                         table=sweep_df, settings={**s, "labels": file_name, "sweep": over,
                                                   "values": [v for v, _ in points]},
                         evidence=res.evidence, key="debiasing_study_sweep",
                         verdict=res.verdict, simulated=True)
        v_last = points[-1][0]
        shown_v = setting(v_last) if over == "eta" else show("count", v_last)
        st.subheader(f"The study at {'η' if over == 'eta' else 'sessions'} = {shown_v}")
    ui.show_verdict(res.verdict, key="study")
    metric_names = list(dict.fromkeys(m for r in res.learners.values() for m in r))
    shown = st.multiselect("Metrics", metric_names, default=metric_names[:3], key="dst_metrics",
                           format_func=theme.metric_label)
    fig = study_figure(res, metrics=shown or metric_names[:1])
    st.plotly_chart(fig, key="dst_chart")
    st.caption(f"{res.queries:,} queries ({res.evidence['test queries']:,} held out), "
               f"{res.documents:,} documents, {res.features} features from {file_name}; "
               f"{s['model']} clicks, η = {setting(s['eta'])}, {s['sessions']:,} sessions × "
               f"{s['runs']} run(s), θ {s['propensity']}. Each dot is the mean over runs and "
               f"test queries, its bar a {show('rate', s['level'])} interval over both.")
    table = res.table()
    table["metric"] = table["metric"].map(theme.metric_label)
    ui.dataframe(table.style.format(theme.styler_formats(table)), hide_index=True,
                 width="stretch")
    st.subheader(f"Against {s['baseline']}")
    comp = res.comparison_table()
    comp = comp[comp["metric"].isin(shown or metric_names[:1])]
    comp["metric"] = comp["metric"].map(theme.metric_label)
    ui.dataframe(comp.style.format(theme.styler_formats(comp)), hide_index=True, width="stretch")
    th = {"position": list(range(1, len(res.theta_true) + 1)), "true θ": res.theta_true,
          "θ used": res.theta}
    with st.expander("θ by position (relative to position 1)"):
        ui.dataframe(th, hide_index=True)
    ui.download_csv(res.table(), "debiasing_study.csv", "Download the learners' results (CSV)",
                    key="dst_csv")
    log, train = res.log
    st.download_button(
        "Download the simulated clicks for LightGBM and XGBoost (zip)",
        data=lambda: export_zip(log, train), file_name="study_clicks.zip",
        mime="application/zip", key="dst_export", on_click="ignore",
        help="The first run's log: lightgbm.svm with lightgbm.svm.query (rows per session) "
             "and lightgbm.svm.position (0-based shown positions) for LightGBM's "
             "position-bias correction, xgboost.svm (qid = session, rows in shown order) for "
             "lambdarank_unbiased, and clicks.parquet (README, “Does debiasing help on my "
             "data?”).")
    with st.expander("Store the simulated clicks as a dataset, to try every other page on them"):
        st.caption(f"The first run's {res.evidence['sessions'] // s['runs']:,} sessions in ulr's "
                   "click-log schema, with the true grade as relevance and the features.")
        ds_name = st.text_input("Dataset name", f"clicks simulated on {file_name}",
                                key="dst_store_name")
        if st.button("Store as a dataset", key="dst_store"):
            with ui.user_errors("Not stored: "):
                from ulr.data import ingest
                from ulr.simulate import write_log
                fd, path = tempfile.mkstemp(prefix="ulr_study_", suffix=".parquet")
                os.close(fd)
                try:
                    write_log(log.frame(train, features=True), path)
                    stored = ingest.load_log(path, ds_name, cur=ui.cursor(),
                                             file_name=f"{Path(file_name).stem}_clicks.parquet",
                                             actor=ui.identity())
                finally:
                    os.unlink(path)
                ui.set_current(stored.dataset)
                st.success(f"Stored “{stored.dataset}” with {stored.rows:,} rows; it is now "
                           "the dataset in use on every page.")
    ui.add_to_report(f"Debiasing study on {file_name}", fig=fig, table=res.table(),
                     settings={**s, "labels": file_name}, evidence=res.evidence,
                     key="debiasing_study", verdict=res.verdict, simulated=True)
