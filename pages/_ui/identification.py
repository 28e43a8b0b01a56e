"""What the log identifies, shown before a method runs (Position bias, User models): the
verdict of :func:`ulr.propensity.identify.identify` in one sentence, and the pairs linking
each two positions in a folded table."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages._ui.cache import cache_data
from ulr.data import catalog


@cache_data(show_spinner=False, max_entries=64)
def _identify(content_hash: str, name: str, positions: int | None, method: str | None):
    from ulr.propensity.identify import identify
    return identify(catalog.open_dataset(name, cur=catalog.cursor()), positions=positions,
                    method=method)


def show_identification(info, *, positions: int | None = None, method: str | None = None,
                        key: str) -> None:
    """A folded section "What this log can identify", open when not every position is; its
    table is drawn only while the section is open (issue 54: a page's first view)."""
    ident = _identify(info.content_hash, info.name, positions, method)
    v = ident.verdict
    section = st.expander(f"What this log can identify: {v.label}",
                          expanded=v.level != "reliable", key=f"{key}_identify",
                          on_change="rerun")
    with section:
        if not section.open:  # drawn when opened: a first view draws no table it hides
            return
        st.markdown(f"**{v.label}.** {v.takeaway}")
        k = ident.positions
        names = [str(i + 1) for i in range(k)]
        table = pd.DataFrame(ident.links, index=names, columns=names)
        table.insert(0, "identified", ["yes" if x else "no" for x in ident.identified])
        table.index.name = "position"
        st.caption(f"Documents (query-document pairs) seen at both positions; {ident.moved:,} "
                   f"of {ident.pairs:,} were seen at several positions. The diagonal counts "
                   "the documents seen at each position.")
        st.table(table)
