"""Debiasing study: does debiasing help on my labelled queries? (Joachims et al. 2017)."""

import hashlib
import os
import tempfile
from collections import OrderedDict
from pathlib import Path

import streamlit as st

from pages import _ui as ui
from ulr import propensity, study, theme
from ulr.errors import UlrError
from ulr.study import simulate as S
from ulr.study.plots import study_figure

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
                        format_func={"pbm": "position-based (PBM)", "cascade": "cascade",
                                     "dbn": "dynamic Bayesian network (DBN)",
                                     "ubm": "user browsing model (UBM)",
                                     "trust": "trust bias"}.get)
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
    seed = int(st.number_input("Seed", 0, 10**6, 0, key="dst_seed"))
    submitted = st.form_submit_button("Run study", type="primary")

if submitted:
    with ui.user_errors("Cannot run the study: "):
        if up is None:
            raise UlrError("Upload a file of labelled queries first.")
        if not chosen:
            raise UlrError("Choose at least one learner.")
        digest = hashlib.sha256(up.getbuffer()).hexdigest()[:16]
        digest_t = hashlib.sha256(up_test.getbuffer()).hexdigest()[:16] if up_test else ""
        key = (digest, digest_t, model, float(eta), sessions, runs, tuple(chosen), baseline,
               theta_by, seed)
        cache = _results()
        if key not in cache:
            data = _read(up)
            test = _read(up_test) if up_test is not None else None
            bar = st.progress(0.0, text="Starting…")

            def progress(done, total, msg):
                bar.progress(done / total, text=f"{msg} ({done}/{total})")

            with ui.cancellable() as stop:
                res = study.run_study(data, test=test, learners=chosen, baseline=baseline,
                                      model=model, eta=float(eta), sessions=sessions,
                                      runs=runs, propensity=theta_by, seed=seed,
                                      progress=progress, should_stop=stop, keep_log=True)
            bar.empty()
            cache[key] = (res, up.name)
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
    res, file_name = got
    s = res.settings
    ui.show_verdict(res.verdict, key="study")
    metric_names = list(next(iter(res.learners.values())))
    shown = st.multiselect("Metrics", metric_names, default=metric_names[:3], key="dst_metrics",
                           format_func=theme.metric_label)
    fig = study_figure(res, metrics=shown or metric_names[:1])
    st.plotly_chart(fig, key="dst_chart")
    st.caption(f"{res.queries:,} queries ({res.evidence['test queries']:,} held out), "
               f"{res.documents:,} documents, {res.features} features from {file_name}; "
               f"{s['model']} clicks, η = {s['eta']:g}, {s['sessions']:,} sessions × "
               f"{s['runs']} run(s), θ {s['propensity']}. Each dot is the mean over runs and "
               f"test queries, its bar a {s['level']:.0%} interval over both.")
    table = res.table()
    table["metric"] = table["metric"].map(theme.metric_label)
    st.dataframe(table.style.format(theme.styler_formats(table)), hide_index=True,
                 width="stretch")
    st.subheader(f"Against {s['baseline']}")
    comp = res.comparison_table()
    comp = comp[comp["metric"].isin(shown or metric_names[:1])]
    comp["metric"] = comp["metric"].map(theme.metric_label)
    st.dataframe(comp.style.format(theme.styler_formats(comp)), hide_index=True, width="stretch")
    th = {"position": list(range(1, len(res.theta_true) + 1)), "true θ": res.theta_true,
          "θ used": res.theta}
    with st.expander("θ by position (relative to position 1)"):
        st.dataframe(th, hide_index=True)
    ui.download_csv(res.table(), "debiasing_study.csv", "Download the learners' results (CSV)",
                    key="dst_csv")
    with st.expander("Store the simulated clicks as a dataset, to try every other page on them"):
        st.caption(f"The first run's {res.evidence['sessions'] // s['runs']:,} sessions in ulr's "
                   "click-log schema, with the true grade as relevance and the features.")
        ds_name = st.text_input("Dataset name", f"clicks simulated on {file_name}",
                                key="dst_store_name")
        if st.button("Store as a dataset", key="dst_store"):
            with ui.user_errors("Not stored: "):
                from ulr.data import ingest
                from ulr.simulate import write_log
                log, train = res.log
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
