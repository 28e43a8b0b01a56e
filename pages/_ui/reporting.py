"""Who is acting (report owners), this session's report, and the "Add to report" button."""

from __future__ import annotations

import hashlib
import re
import secrets

import pandas as pd
import streamlit as st

from pages._ui import keys
from pages._ui.cache import cache_data, cached_only
from pages._ui.session import DATASET_KEY, SOURCE_KEY, cursor
from pages._ui.widgets import cancellable, user_errors
from ulr.data import catalog, ingest
from ulr.errors import UlrError

REPORT_KEY = keys.REPORT

# ---------------------------------------------------------------- who is acting (report owners)
#
# With Streamlit's authentication configured ([auth] in secrets.toml) the identity is the
# signed-in user (issuer + subject of the OIDC ID token); editing needs sign-in. Without it,
# each browser keeps a random token in a cookie the app sets once (a first-party cookie,
# read back with st.context.cookies): it survives a refresh and a new tab, is sent by
# nothing but this browser, and never appears in a link. The store only keeps a hash of it.

BROWSER_COOKIE = "ulr_browser"
_IDENTITY_KEY = keys.IDENTITY
_COOKIE_TO_SET = keys.COOKIE_TO_SET
_TOKEN_RE = re.compile(r"[0-9a-f]{32}")


def auth_configured() -> bool:
    """True when Streamlit's built-in authentication is set up (``[auth]`` in secrets.toml)."""
    try:
        return "is_logged_in" in st.user.to_dict()
    except Exception:  # noqa: BLE001 - no script run context (a bare import)
        return False


def signed_in() -> bool:
    return auth_configured() and bool(st.user.to_dict().get("is_logged_in"))


def _browser_identity() -> str:
    ident = st.session_state.get(_IDENTITY_KEY)
    if ident:
        return ident
    try:
        token = st.context.cookies.get(BROWSER_COOKIE)
    except Exception:  # noqa: BLE001 - no browser request behind this run (AppTest)
        token = None
    if not isinstance(token, str) or not _TOKEN_RE.fullmatch(token):
        token = secrets.token_hex(16)
        st.session_state[_COOKIE_TO_SET] = token
    ident = "browser:" + hashlib.sha256(token.encode()).hexdigest()[:32]
    st.session_state[_IDENTITY_KEY] = ident
    return ident


def identity() -> str | None:
    """The acting identity for :mod:`ulr.report.saved`: the signed-in user when authentication is
    configured (None when not signed in), else this browser's own id."""
    if auth_configured():
        user = st.user.to_dict()
        if not user.get("is_logged_in"):
            return None
        if user.get("iss") and user.get("sub"):
            return f"oidc:{user['iss']}|{user['sub']}"
        return f"email:{user['email']}" if user.get("email") else None
    return _browser_identity()


def sign_in_button(*, where=None, key: str = "ulr_login") -> None:
    (where or st).button("Sign in", key=key, on_click=st.login, icon=":material/login:",
                         type="primary")


def require_sign_in(sentence: str) -> None:
    """With authentication configured and nobody signed in: one sentence, a sign-in
    button, and the page stops."""
    if auth_configured() and not signed_in():
        st.info(sentence, icon=":material/lock:")
        sign_in_button(key="ulr_login_page")
        st.stop()


def account_box() -> None:
    """The sidebar's sign-in/out (authentication configured), or, without it, the script
    that gives a new browser its own id cookie (once, on its first session)."""
    if auth_configured():
        if signed_in():
            user = st.user.to_dict()
            st.sidebar.caption(f"Signed in as {user.get('email') or user.get('name') or 'you'}")
            st.sidebar.button("Sign out", key="ulr_logout", on_click=st.logout,
                              icon=":material/logout:")
        else:
            sign_in_button(where=st.sidebar)
        return
    _browser_identity()
    token = st.session_state.get(_COOKIE_TO_SET)
    if token:  # a fresh browser: remember its id (one year; this site only; not in links)
        with st.sidebar:
            st.html(f"<script>document.cookie = '{BROWSER_COOKIE}={token}; Path=/; "
                    "Max-Age=31536000; SameSite=Lax';</script>", unsafe_allow_javascript=True,
                    width=1)


def current_report_id() -> str | None:
    """This session's report: the one picked or opened by link (``?report=``) when this
    identity may read it, else the one this identity changed last; None when they have
    none (a visit makes none: the first "Add to report" or "New report" does) or nobody
    is signed in and no link is readable."""
    from ulr.report import saved as reports

    actor = identity()
    rid = st.session_state.get(REPORT_KEY)
    if rid and reports.get_info(rid, actor=actor) is not None:
        return rid
    wanted = st.query_params.get("report")
    info = reports.get_info(wanted, actor=actor) if wanted else None
    if info is None and actor is not None:
        info = reports.latest(actor=actor)
    if info is None:
        return None
    st.session_state[REPORT_KEY] = info.id
    return info.id


def set_current_report(report_id: str) -> None:
    st.session_state[REPORT_KEY] = report_id


def _report_to_add_to(actor: str):
    """The session's report when this identity may change it, else the one it changed last
    (a report opened by someone else's link is never added to)."""
    from ulr.report import saved as reports

    rid = current_report_id()
    info = reports.get_info(rid, actor=actor) if rid else None
    if not reports.can_edit(info, actor=actor):
        info = reports.latest_or_new(actor=actor)
        set_current_report(info.id)
    return info


def add_to_report(title: str, *, fig=None, table: pd.DataFrame | None = None,
                  settings: dict | None = None, caveats: list[str] | None = None,
                  evidence: dict | None = None, takeaway: str | None = None,
                  key: str, verdict=None, simulated: bool = False) -> None:
    """An "Add to report" button that saves this result in the session's report.

    ``verdict`` (a :class:`ulr.verdict.Verdict`) is stored with the item; its
    takeaway pre-fills an empty ``takeaway``, so page, report and slide agree.

    ``caveats`` are the warnings the page shows next to the result (word for
    word), ``evidence`` what it rests on (rows, clicks, queries, sessions) and
    ``takeaway`` a one-line plain-words summary (pre-filled from the result when
    empty); reports and exports carry all three. The item is written to the
    store at once with the dataset's content hash, so it survives a refresh and
    a restart, and a later change of the dataset is flagged on it. A result of
    simulated data (``simulated``: Severity sweep, the simulated OPE study, Debiased
    recommendations' worlds, Bandit lab's kveton/linear environments) is saved with
    provenance "simulated" and no dataset: a later change of the dataset in use says
    nothing about it. It goes to a
    report of the acting identity (:func:`identity`); with authentication
    configured and nobody signed in, the button is off and says why.
    """
    actor = identity()
    if actor is None:
        st.button("Add to report", key=f"report_{key}", icon=":material/post_add:",
                  disabled=True, help="Sign in (in the sidebar) to add results to a report.")
        return
    if st.button("Add to report", key=f"report_{key}", icon=":material/post_add:"):
        from ulr.report import ReportItem
        from ulr.report import saved as reports

        name, content_hash = "", ""
        if not simulated and st.session_state.get(SOURCE_KEY):  # no dataset hash to track
            name = f"{st.session_state[SOURCE_KEY]} (registered source)"
        elif not simulated:
            name = st.session_state.get(DATASET_KEY, ingest.SAMPLE_NAME)
            try:
                content_hash = catalog.get_dataset(cursor(), name).content_hash or ""
            except UlrError:
                content_hash = ""
        with user_errors("Could not add to the report: "):
            item = ReportItem.from_result(
                title, fig=fig, table=table, settings=settings, caveats=caveats,
                evidence=evidence, takeaway=takeaway or "", dataset=name,
                content_hash=content_hash, verdict=verdict,
                provenance="simulated" if simulated else "dataset")
            viewed = current_report_id()
            target = _report_to_add_to(actor)
            reports.add_item(target.id, item, actor=actor)
            n = reports.get_info(target.id, actor=actor).items
            where = ("the report" if viewed in (None, target.id)  # None: it has just begun
                     else f"your report “{target.name}”")
            st.toast(f"Added “{title}” to {where} ({n} item{'s' if n != 1 else ''}).")


def presentation_toggle() -> bool:
    """A sidebar link to the presentation view of this session's report, and the
    sidebar's account box (:func:`account_box`; app.py calls this on every page).

    The old in-page "presentation mode" (CSS over the working pages) is gone:
    the Present page shows the report as slides, with its own link.
    """
    account_box()
    try:
        rid = st.session_state.get(REPORT_KEY)
        st.sidebar.page_link("pages/present.py", label="Present the report",
                             icon=":material/slideshow:",
                             query_params={"report": rid} if rid else None)
    except Exception:  # noqa: BLE001 - the page is not registered (e.g. AppTest of one page)
        pass
    return False


# ---------------------------------------------------------------- results that know each other
#
# A PBM-based result (Position bias' θ, the IPW rankers) carries a caveat when the dataset's
# user-model comparison finds the PBM fitting worse than the best click model beyond noise
# (ulr.verdict.pbm_misfit). The comparison is the one of ulr.clickmodels (its public API),
# with the User models page's defaults; it is computed once per dataset version and shared
# by every page and visitor.

PBM_CHECK_FRACTION = 0.2
PBM_CHECK_BOOTSTRAP = 50


@cache_data(show_spinner=False, max_entries=32)
def _user_models(content_hash: str, name: str, _should_stop=None):
    from ulr.clickmodels import DEFAULT as MODELS, evaluate, sessions
    from ulr.data.scan import scan_of
    lg = catalog.open_dataset(name, cur=cursor())
    S = sessions.collect(scan_of(lg), test_fraction=PBM_CHECK_FRACTION, seed=0)
    return evaluate.compare(S, list(MODELS), n_bootstrap=PBM_CHECK_BOOTSTRAP, seed=0,
                            test_fraction=PBM_CHECK_FRACTION, refit_intervals=False,
                            should_stop=_should_stop)


def pbm_fit_reason(log, *, key: str):
    """The PBM-misfit caveat of this dataset (a :class:`ulr.verdict.Reason`) or ``None``.

    Reads the user-model comparison when it is cached; otherwise offers a button that
    computes it (about ten seconds on 50,000 rows). Logs without sessions have none.
    """
    from ulr.verdict import pbm_misfit
    info = log.info
    if not info.has("session_id"):
        return None
    held, comp = cached_only(lambda: _user_models(info.content_hash, info.name))
    if not held:
        comp = None
        if not st.button("Check that the position-based model fits this log", key=key,
                         help="Compares the click models of the User models page on held-out "
                              "sessions; a result that assumes the position-based model then "
                              "says whether a better model fits."):
            return None
        with user_errors("Could not compare the user models: "), cancellable() as stop, \
                st.spinner("Comparing the user models…"):
            comp = _user_models(info.content_hash, info.name, _should_stop=stop)
    return pbm_misfit(comp)
