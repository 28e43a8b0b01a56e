"""Home: what the tool answers, the current dataset's key figures, where to go next."""

import streamlit as st

from pages import _ui as ui
from ulr.data import catalog
from ulr.data.summary import summary
from ulr.quantity import rate_of, show

st.title("ulr — unbiased learning to rank")
st.markdown(
    "Users click what they see, and they see the top of the list: **ulr measures how much "
    "position bias distorts your click logs.** It shows whether a ranker trained with "
    "inverse-propensity weighting beats one trained naively on the same clicks, and replays "
    "bandit simulations to show how fast an online learner would catch up. "
    "Every number can be reproduced from the command line and exported as a report.")

@ui.cache_data(show_spinner=False, max_entries=64)
def _summary(content_hash: str, name: str):
    return summary(catalog.open_dataset(name, cur=catalog.cursor()))


src = ui.current_source()  # a registered source: its figures come from its stored statistics
if src is not None:
    from ulr.engines import sources
    s = sources.summary(src)
    st.subheader(f"Current dataset: “{ui.shown(src)}” (registered source)")
else:
    log = ui.current_log()
    s = _summary(log.info.content_hash, log.info.name)
    st.subheader(f"Current dataset: “{ui.shown(log.info.name)}”")
c = st.columns(5)
c[0].metric("Rows", f"{s['rows']:,}")
c[1].metric("Queries", f"{s['queries']:,}")
c[2].metric("Positions", f"{s['positions']}")
c[3].metric("Overall CTR", rate_of(s['ctr'], s['rows']).text())
if src is None:
    c[4].metric("Randomized", show('rate', s['randomized_share']))

st.subheader("Questions you can answer")
# One question per page of the navigation (pages/_ui.PAGES gives the path and the title).
QUESTIONS = {
    "pages/data.py": "What is in my click log, and is it clean?",
    "pages/audit.py": "Which questions can my log answer, and what are the answers?",
    "pages/position_bias.py": "How strong is position bias in my logs?",
    "pages/user_models.py": "Which user model fits my log: do users stop after a click?",
    "pages/compare_rankers.py": "Does bias correction make the ranker I train on my clicks "
                                "better?",
    "pages/severity_sweep.py": "How does IPW's advantage grow as position bias gets stronger?",
    "pages/bandit_lab.py": "Could an online learner rank better, and how fast would it learn?",
    "pages/off_policy.py": "How would a new policy have done, judged from the old policy's logs?",
    "pages/debiased_recs.py": "How much do debiasing methods help when ratings are missing not "
                              "at random?",
    "pages/report.py": "How do I collect, name and export my results?",
    "pages/present.py": "How do I show all this to my stakeholders, one slide at a time?",
}
for path, title, _icon, is_home in ui.PAGES:
    if not is_home:
        st.page_link(path, label=f"**{title}** — {QUESTIONS[path]}")
