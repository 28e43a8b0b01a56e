"""What the off-policy views share: the log to evaluate and the headline tiles."""

from pathlib import Path

import streamlit as st

from pages import _ui as ui
from ulr.data import catalog, ingest
from ulr import verdict as V
from ulr.ope import figures as F
from ulr.quantity import Quantity

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_ope.csv"
OPE_SAMPLE = ui.OPE_SAMPLE  # the bundled sample's name in ?dataset=
LABELS = F.LABELS
VIEWS = ["Evaluate a log", "Simulation: bias and variance", "Learn a policy"]


def _open(dataset: str, name: str):
    if dataset == OPE_SAMPLE:
        return ingest.open_file(SAMPLE)
    return catalog.open_dataset(name, cur=catalog.cursor())


@ui.cache_data(show_spinner=False, max_entries=4)
def _sample_hash() -> str:
    return ingest.file_hash(SAMPLE)


def _pick_log():
    """The current dataset if it has propensities, else the bundled OPE sample.

    The choice is the link's ``dataset=`` (old links: ``log=``), which here may also name
    the bundled sample (:data:`OPE_SAMPLE`); returns ``(dataset, name, content_hash, info)``.
    """
    log = ui.current_log()
    has_p = log.info.has("propensity")
    options = list(dict.fromkeys(([log.info.name] if has_p else []) + [OPE_SAMPLE]))
    label = {OPE_SAMPLE: "bundled OPE sample (uniform-random log, 3 positions)"}
    if not has_p:
        st.info(f"The current dataset “{ui.shown(log.info.name)}” has no `propensity` column, "
                "so it cannot be evaluated off-policy. Showing the bundled OPE sample: 10,000 rows "
                "of a uniformly random 3-position log with a click-through rate under 1% "
                "(upload your own log with propensities on the Data page).")
    dataset = st.radio("Log", options, horizontal=True, key="ope_dataset",
                       index=ui.url_index("dataset", options, options[0]),
                       format_func=lambda o: label.get(o, f"current dataset “{ui.shown(o)}”"))
    if dataset == OPE_SAMPLE:
        return OPE_SAMPLE, "sample_ope.csv", _sample_hash(), None
    return log.info.name, log.info.name, log.info.content_hash, log.info



def _headline(verdict, *, target: str = "Target policy") -> None:
    """The verdict's numbers as tiles, each interval in plain sight (click rates in %)."""
    e = verdict.estimate
    if "value" not in e or e.get("value") is None:
        return
    name = LABELS.get(e["estimator"], e["estimator"])
    level = e.get("level", 0.95)
    bounded = e.get("lower") is not None and e.get("upper") is not None
    se = V.se_of(e["lower"], e["upper"], level) if bounded else None
    t = st.columns(3)
    t[0].metric(f"{target}, {name}", V.fmt(e["value"], se, pct=True),
                f"{level:.0%} interval {V.fmt(e['lower'], se, pct=True)} to "
                f"{V.fmt(e['upper'], se, pct=True)}" if bounded else
                "no finite-sample bound for a self-normalized estimate",
                delta_color="off", delta_arrow="off", help="expected clicks per row")
    t[1].metric("Logging policy", Quantity("rate", e["logging"], se=e.get("logging_se", se))
                .text())  # as the verdict's sentence reads it
    if e.get("delta_lower") is not None:
        d = Quantity("points", e["delta"], e["delta_lower"], e["delta_upper"], level=level)
        t[2].metric("Difference", d.text(interval="none"),
                    f"{level:.0%} interval {d.ends()}",
                    delta_color="off", delta_arrow="off",
                    help="target minus logging, paired bootstrap interval; an interval "
                         "containing 0 means the two cannot be told apart")



def estimates_table(res):
    """The estimates as shown (values and bounds clipped to [0, 1], a click rate's range),
    with the ``clipped_rate`` warning as the caption under them when it applies."""
    note = next((w.message for w in res.warnings if w.code == "clipped_rate"), None)
    if note:
        st.caption(ui.literal(note))
    return res.estimates_table()
