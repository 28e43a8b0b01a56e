"""Off-policy evaluation: estimate a new policy's value from a log of another, check the
estimators against a simulation with known truth, and learn a policy from the log."""

import streamlit as st

from pages import _ui as ui
from pages._ope import learn, log, simulation
from pages._ope.common import VIEWS

st.title("Off-policy evaluation")
st.caption(
    "How would a new ranking policy have done, judged only from a log of the old one? "
    "Inverse propensity scoring reweights every logged click by how much more (or less) "
    "often the new policy would have taken that action: w = π(a|x) / p(a|x). The log must "
    "record the logging policy's probability p of each shown document (column `propensity`).")

view = st.segmented_control("View", VIEWS, default=VIEWS[ui.url_index("view", VIEWS, VIEWS[0])],
                            key="ope_view") or VIEWS[0]

if view == VIEWS[0]:
    log.view_log()
elif view == VIEWS[1]:
    simulation.view_simulation()
else:
    learn.view_learn()
