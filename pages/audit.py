"""What can this log tell me? Every question the current dataset supports, answered at once.

All computation is in :mod:`ulr.audit`: the log's shape (one aggregate statement),
which questions it supports and why not, each answer with its page's defaults, and
the report built from them. This page draws them, runs the answers under one
progress box that stops when the visitor leaves, and links each answer to its page
with the same settings.
"""

import streamlit as st

from pages import _ui as ui
from pages._ui import keys
from ulr import audit
from ulr.data import catalog
from ulr.quantity import show

st.title("What can this log tell me?")
st.caption(
    "Which questions can this click log answer, and what are the answers? Each question "
    "needs something of the log (sessions, propensities, features, ...); those it supports "
    "are answered with the defaults of their page, and each answer links to its page to go "
    "further. One click turns them all into a report.")


@ui.cache_data(show_spinner=False, max_entries=256)
def _answer(content_hash: str, name: str, qid: str, _ctx=None):
    """One question's :class:`ulr.audit.Answer`, keyed by content hash and question.

    ``_ctx`` (not part of the key) is the run's shared :class:`ulr.audit.Context`: the
    off-policy evaluation serves three questions and is computed once per run."""
    ctx = _ctx or audit.Context(catalog.open_dataset(name, cur=catalog.cursor()),
                                _shape(content_hash, name))
    return audit.answer(ctx, next(a for a in audit.assess(ctx.shape) if a.id == qid))


@ui.cache_data(show_spinner=False, max_entries=64)
def _shape(content_hash: str, name: str):
    """The log's :class:`ulr.audit.LogShape` (one aggregate statement), keyed by content."""
    log = catalog.open_dataset(name, cur=catalog.cursor())
    return audit.read_shape(log)


def _show_shape(shape) -> None:
    m = st.columns(6)
    m[0].metric("Rows", f"{shape.rows:,}")
    m[1].metric("Clicks", f"{shape.clicks:,}")
    m[2].metric("Queries", f"{shape.queries:,}")
    m[3].metric("Sessions", "—" if shape.sessions is None else f"{shape.sessions:,}")
    m[4].metric("Positions", f"{shape.positions:,}")
    m[5].metric("Features", f"{len(shape.features):,}")
    with st.expander("What the log holds"):
        st.markdown("\n".join(f"- {ui.literal(line)}" for line in shape.lines()))


def _run(info, todo: list) -> dict:
    """Every answerable question's answer: at once when all are cached, else under one
    progress box naming the step, stopped when this script run ends."""
    ids = [a.id for a in todo]
    held, values = ui.cached_only(lambda: [_answer(info.content_hash, info.name, q)
                                           for q in ids])
    if held:
        return dict(zip(ids, values))
    out = {}
    with ui.cancellable() as stop, \
            st.status(f"Answering {len(ids)} questions on '{ui.shown(info.name)}'…",
                      expanded=False) as status:
        ctx = audit.Context(catalog.open_dataset(info.name, cur=ui.cursor()),
                            _shape(info.content_hash, info.name), stop)
        bar = st.progress(0.0)
        for i, a in enumerate(todo):
            bar.progress(i / len(todo), text=f"{a.question.question} ({i + 1} of {len(todo)})")
            out[a.id] = _answer(info.content_hash, info.name, a.id, _ctx=ctx)
            st.write(f"**{a.question.label}**: {a.question.question} "
                     f"({show('duration', out[a.id].seconds)})")
        bar.progress(1.0, text="done")
        status.update(label=f"Answered {sum(x.answerable for x in out.values())} of "
                            f"{len(ids)} questions on '{ui.shown(info.name)}'", state="complete")
    return out


def _show_answer(a, name: str) -> None:
    with st.container(border=True, key=f"audit_answer_{a.id}"):
        st.markdown(f"#### {a.question}")
        if not a.answerable:
            st.caption(ui.literal(a.reason))
            return
        if a.method:
            st.caption(f"Method: {a.method} (what this log supports).")
        ui.show_verdict(a.verdict, key=f"audit_{a.id}")
        try:
            st.page_link(a.page, label=f"Open {a.label} with these settings",
                         icon=":material/arrow_forward:",
                         query_params={**{k: str(v) for k, v in a.params.items()},
                                       "dataset": name})
        except Exception:  # noqa: BLE001 - the page run on its own (no navigation)
            st.caption(f"→ {a.label}")


def _not_answerable(items) -> None:
    st.subheader("Not answerable from this log")
    for a in items:
        with st.container(border=True, key=f"audit_missing_{a.id}"):
            st.markdown(f"**{a.question}**")
            st.caption(ui.literal(a.reason))
    ui.dead_end("A question becomes answerable when the log maps the field its reason names.",
                level="info")


def _explore() -> None:
    st.subheader("Explore (simulations, not answers about this log)")
    for page, label, what in audit.EXPLORE:
        try:
            st.page_link(page, label=f"{label}: {what}", icon=":material/science:")
        except Exception:  # noqa: BLE001 - the page run on its own (no navigation)
            st.caption(f"{label}: {what}")


def _report_form(result, info) -> None:
    st.subheader("Build the report")
    actor = ui.identity()
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    title = c1.text_input("Report title", f"What “{info.name}” can tell us", key="audit_title",
                          max_chars=200)
    go = c2.button("Build the report", key="audit_build", type="primary",
                   disabled=actor is None or not title.strip(),
                   help=None if actor else "Sign in (in the sidebar) to save a report.")
    if go:
        with ui.user_errors("Could not build the report: "), st.spinner("Saving the report…"):
            rid = audit.build_report(result, name=title.strip(), actor=actor,
                                     dataset=info.name, content_hash=info.content_hash or "")
            ui.set_current_report(rid)
            st.session_state[keys.AUDIT_BUILT] = (info.content_hash, rid, title.strip(),
                                                len(result.answered) + 1)
    built = st.session_state.get(keys.AUDIT_BUILT)
    if built and built[0] == info.content_hash:
        built = built[1:]
        st.success(f"Saved the report “{ui.shown(built[1])}” with {built[2]} items.")
        try:
            st.page_link("pages/report.py", label="Open the report",
                         icon=":material/description:", query_params={"report": built[0]})
        except Exception:  # noqa: BLE001 - the page run on its own (no navigation)
            pass


if ui.current_source() is not None:
    st.info("A registered source keeps click counts, not rows; the audit reads rows. Pick a "
            "dataset in the sidebar, or upload a sample of the log on the Data page.")
    st.stop()
log = ui.current_log()
info = log.info
with ui.user_errors():
    shape = _shape(info.content_hash, info.name)
    _show_shape(shape)
    assessed = audit.assess(shape)
    todo = [a for a in assessed if a.answerable]
    ran = st.session_state.get(keys.AUDIT_RAN) == info.content_hash
    if not ran:
        st.markdown(f"This log supports {len(todo)} of {len(assessed)} questions:\n"
                    + "\n".join(f"- {a.question.question}" for a in todo))
        st.button("Answer every question", key="audit_run", type="primary",
                  icon=":material/play_arrow:", on_click=st.session_state.update,
                  kwargs={keys.AUDIT_RAN: info.content_hash})
    if ran:
        answers = _run(info, todo)
        result = audit.Audit(shape, [answers.get(a.id) or audit.answer(None, a)
                                     for a in assessed])
        for a in result.answered:
            _show_answer(a, info.name)
        missing = [a for a in result.answers if not a.answerable]
    else:
        missing = [audit.answer(None, a) for a in assessed if not a.answerable]
    if missing:
        _not_answerable(missing)
    _explore()
    if ran:
        _report_form(result, info)
