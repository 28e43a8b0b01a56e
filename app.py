"""ulr dashboard entry point: ``streamlit run app.py``."""

from pathlib import Path

import streamlit as st

from pages import _ui as ui

st.set_page_config(page_title="ulr — unbiased learning to rank", page_icon=":material/sort:",
                   layout="wide")

HERE = Path(__file__).parent
PAGES = [
    # (file, title, icon, default)
    ("pages/home.py", "Home", ":material/home:", True),
    ("pages/data.py", "Data", ":material/table:", False),
    ("pages/position_bias.py", "Position bias", ":material/trending_down:", False),
    ("pages/compare_rankers.py", "Compare rankers", ":material/leaderboard:", False),
    ("pages/severity_sweep.py", "Severity sweep", ":material/ssid_chart:", False),
    ("pages/bandit_lab.py", "Bandit lab", ":material/casino:", False),
    ("pages/off_policy.py", "Off-policy evaluation", ":material/rule:", False),
    ("pages/debiased_recs.py", "Debiased recommendation", ":material/recommend:", False),
    ("pages/report.py", "Report", ":material/description:", False),
    ("pages/present.py", "Present", ":material/slideshow:", False),
]

nav = st.navigation([st.Page(f, title=t, icon=i, default=d)
                     for f, t, i, d in PAGES if (HERE / f).exists()])
with st.sidebar:
    ui.dataset_picker()
ui.presentation_toggle()
nav.run()
