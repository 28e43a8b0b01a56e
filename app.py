"""ulr dashboard entry point: ``streamlit run app.py``."""

import streamlit as st

from pages import _ui as ui
from ulr import server
from ulr.data import catalog

server.send_at_once(st.get_option("server.port"))  # once per process: see its docstring
st.set_page_config(page_title="ulr — unbiased learning to rank", page_icon=":material/sort:",
                   layout="wide")

nav = ui.navigation()
with catalog.waiting(ui.wait_notice()):
    with st.sidebar:
        ui.dataset_picker()
    ui.presentation_toggle()
    with server.frozen_imports():
        nav.run()
