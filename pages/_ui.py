"""Small Streamlit helpers shared by the pages (UI only; no computation).

The app-wide state is the selected dataset name, ``st.session_state["dataset"]``.
It defaults to the bundled sample and follows the ``?dataset=`` URL parameter.
A registered source (a lake or Spark table whose statistics only are stored,
:mod:`ulr.engines.sources`) can be selected instead: ``st.session_state["source"]``
and ``?source=``. Pages that need rows get one sentence from :func:`current_log`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import datetime as _dt
import json
import os
import re
import secrets
from pathlib import Path

import pandas as pd
import streamlit as st

from ulr import __version__, store
from ulr.errors import Cancelled, UlrError
from ulr.export import safe_csv_bytes

DATASET_KEY = "dataset"
SOURCE_KEY = "source"


# The app's pages, in menu order: (file, title, icon, default). app.py builds st.navigation from them.
PAGES = [
    ("pages/home.py", "Home", ":material/home:", True),
    ("pages/data.py", "Data", ":material/table:", False),
    ("pages/position_bias.py", "Position bias", ":material/trending_down:", False),
    ("pages/user_models.py", "User models", ":material/psychology:", False),
    ("pages/compare_rankers.py", "Compare rankers", ":material/leaderboard:", False),
    ("pages/severity_sweep.py", "Severity sweep", ":material/ssid_chart:", False),
    ("pages/bandit_lab.py", "Bandit lab", ":material/casino:", False),
    ("pages/off_policy.py", "Off-policy evaluation", ":material/rule:", False),
    ("pages/debiased_recs.py", "Debiased recommendation", ":material/recommend:", False),
    ("pages/report.py", "Report", ":material/description:", False),
    ("pages/present.py", "Present", ":material/slideshow:", False),
]
APP = Path(__file__).resolve().parent.parent / "app.py"
_APP_SEEN = "_ulr_app_seen"


CACHE_TTL = "6h"      # a cached result unused this long is dropped (and max_entries bounds each)
_BY_DATASET: dict = {}  # content hash -> {call: (cached function, args, kwargs)}, for forget()
_BY_DATASET_CAP = 2048


def cache_data(**options):
    """``st.cache_data`` for the pages' computations, shared across sessions.

    Bounded: pass ``max_entries``; entries expire after :data:`CACHE_TTL` unless ``ttl``
    is given. A function whose first parameter is ``content_hash`` has its entries
    recorded per dataset, so :func:`forget` clears them when the dataset is deleted or
    replaced.

    The cached body runs without the store's wait notice (:func:`wait_notice`, a toast):
    a toast recorded inside a cached function cannot be replayed by the next session that
    hits the cache (Streamlit raises ``CacheReplayClosureError``), which a cold server
    with several visitors waiting on the store's lock did.
    """
    options.setdefault("ttl", CACHE_TTL)

    def decorate(func):
        @functools.wraps(func)
        def without_notice(*args, **kwargs):
            with store.waiting(None):
                return func(*args, **kwargs)
        cached = st.cache_data(**options)(without_notice)
        if next(iter(inspect.signature(func).parameters), None) != "content_hash":
            return cached

        @functools.wraps(func)
        def recorded(content_hash, *args, **kwargs):
            if len(_BY_DATASET) > _BY_DATASET_CAP:   # expired entries are gone anyway
                _BY_DATASET.clear()
            calls = _BY_DATASET.setdefault(content_hash, {})
            hashed = sorted((k, v) for k, v in kwargs.items() if not k.startswith("_"))
            calls[(id(cached), repr((args, hashed)))] = (
                cached, (content_hash, *args), kwargs)
            return cached(content_hash, *args, **kwargs)
        recorded.clear = cached.clear
        return recorded
    return decorate


def forget(content_hash: str | None) -> None:
    """Drop every cached page result of the dataset with this content hash."""
    for cached, args, kwargs in _BY_DATASET.pop(content_hash, {}).values():
        cached.clear(*args, **kwargs)


@st.cache_resource(max_entries=128, ttl=CACHE_TTL, show_spinner=False)
def _shared_figure(module: str, name: str, args: tuple, kwargs: tuple):
    import importlib
    return getattr(importlib.import_module(module), name)(*args, **dict(kwargs))


def figure(builder, *args, **kwargs):
    """``builder(*args, **kwargs)``, a plotly figure built once for every session.

    Building a figure (plotly validates every property) cost the heaviest pages 0.2-0.7 s
    per view. The figure object is shared: pages only draw it and hand it to
    :func:`add_to_report`, never change it.
    """
    return _shared_figure(builder.__module__, builder.__qualname__, args,
                          tuple(sorted(kwargs.items())))


def navigation():
    """The app's ``st.navigation`` (called by app.py once per run)."""
    st.session_state[_APP_SEEN] = True
    return st.navigation([st.Page(str(APP.parent / f), title=t, icon=i, default=d)
                          for f, t, i, d in PAGES])


def _in_folder_mode_run() -> bool:
    """True when Streamlit ran this page from the ``pages/`` folder instead of through app.py.

    Streamlit serves an app that has a ``pages/`` folder by the folder until the
    entry script has called ``st.navigation`` once; so the first visitors of a
    fresh server who open a deep link (``/position_bias?...``) get the page run
    on its own (no dataset picker, wrong menu). Such a run has Streamlit's
    folder runner on the stack and not app.py.
    """
    frame = inspect.currentframe()
    folder_runner = False
    while frame is not None:
        code = frame.f_code
        if code.co_filename == str(APP):
            return False
        folder_runner = folder_runner or code.co_name == "_mpa_v1"
        frame = frame.f_back
    return folder_runner


def ensure_app_run() -> None:
    """Hand a page run from the ``pages/`` folder over to app.py (public API only).

    ``st.navigation`` ends the folder mode for the whole server, and ``st.rerun``
    runs this session again, now through app.py's navigation, on the same page
    and URL. Only a session's first run is handed over (a later folder-mode run
    happens only under AppTest, which starts every run in folder mode; a rerun
    there would drop the widget event). Called at the start of the helpers every
    page uses, never at import time (an exception while a module is imported
    breaks concurrent imports).
    """
    if not st.session_state.get(_APP_SEEN) and _in_folder_mode_run():
        navigation()
        st.rerun()


ROOT = Path(__file__).resolve().parent.parent


def cursor():
    """This session's own reader connection on the store (see :func:`ulr.store.cursor`)."""
    ensure_app_run()
    cur = st.session_state.get("_ulr_cursor")
    if cur is None:
        cur = store.cursor()
        st.session_state["_ulr_cursor"] = cur
    return cur


def dataset_names() -> list[str]:
    """The stored datasets, read fresh (the CLI or another session may have changed them)."""
    names = [d.name for d in store.list_datasets(cursor())]
    if store.SAMPLE_NAME not in names:
        store.ensure_sample(cur=cursor())
        names = [d.name for d in store.list_datasets(cursor())]
    return names


def _deleted_elsewhere(name: str) -> None:
    st.session_state[DATASET_KEY] = store.SAMPLE_NAME
    st.session_state["_ulr_flash"] = (
        f"The dataset “{name}” was deleted in another session; showing the sample.")


def current_name() -> str:
    """Selected dataset; from the URL on first visit; the sample if unknown."""
    ensure_app_run()
    names = dataset_names()
    if DATASET_KEY not in st.session_state:
        wanted = st.query_params.get("dataset")
        if wanted is not None and wanted not in names:
            st.session_state["_ulr_flash"] = (
                f"The link names a dataset “{wanted}” that does not exist here; "
                f"showing the sample instead.")
            wanted = None
        st.session_state[DATASET_KEY] = wanted or store.SAMPLE_NAME
    if st.session_state[DATASET_KEY] not in names:
        _deleted_elsewhere(st.session_state[DATASET_KEY])
    return st.session_state[DATASET_KEY]


def set_current(name: str) -> None:
    st.session_state[DATASET_KEY] = name
    st.session_state[SOURCE_KEY] = None
    st.query_params["dataset"] = name
    if "source" in st.query_params:
        del st.query_params["source"]


def source_names() -> list[str]:
    """The registered sources, read fresh (the CLI may have added one)."""
    from ulr.engines import sources
    return [s["name"] for s in sources.list_sources()]


def current_source() -> str | None:
    """The registered source selected instead of a dataset (from ``?source=`` on first
    visit), or None. A source removed elsewhere falls back to the dataset, with a sentence."""
    ensure_app_run()
    if SOURCE_KEY not in st.session_state:
        wanted = st.query_params.get("source")
        st.session_state[SOURCE_KEY] = None
        if wanted is not None:
            if wanted in source_names():
                st.session_state[SOURCE_KEY] = wanted
            else:
                st.session_state["_ulr_flash"] = (
                    f"The link names a registered source “{wanted}” that does not exist here; "
                    "showing a dataset instead.")
        return st.session_state[SOURCE_KEY]
    name = st.session_state[SOURCE_KEY]
    if name is not None and name not in source_names():
        st.session_state[SOURCE_KEY] = None
        st.session_state["_ulr_flash"] = (
            f"The registered source “{name}” was removed elsewhere; showing a dataset instead.")
    return st.session_state[SOURCE_KEY]


def set_current_source(name: str) -> None:
    st.session_state[SOURCE_KEY] = name
    st.query_params["source"] = name


NEEDS_ROWS = ("“{name}” is a registered source whose rows stay where they live, and this page "
              "needs the rows themselves (Position bias and the Data page work from its stored "
              "statistics): pick a dataset in the sidebar, or upload a sample of the log on the "
              "Data page.")


def needs_rows(name: str) -> None:
    """The one sentence a page that needs rows shows for a registered source; stops the page."""
    dead_end(NEEDS_ROWS.format(name=name), label="Upload a sample on the Data page",
             level="info")
    st.stop()


def current_log() -> store.Log:
    """The selected dataset, opened on this session's cursor.

    A dataset deleted by another session falls back to the sample, with a sentence.
    With a registered source selected, the page says that it needs rows and stops.
    """
    src = current_source()
    if src is not None:
        needs_rows(src)
    name = current_name()
    try:
        return store.open_dataset(name, cur=cursor())
    except UlrError:
        if name == store.SAMPLE_NAME:
            raise
        _deleted_elsewhere(name)
        st.warning(st.session_state.pop("_ulr_flash"))
        return store.open_dataset(store.SAMPLE_NAME, cur=cursor())


def wait_notice():
    """An ``on_wait`` callback for :func:`ulr.store.waiting`: one notice per script run."""
    shown = []

    def on_wait(seconds: float) -> None:
        if not shown and seconds > 0.3:
            shown.append(True)
            st.toast("Waiting for another load to finish…", icon=":material/hourglass_top:")
    return on_wait


def dataset_picker(*, where=None) -> store.Log | None:
    """Select box for the app-wide dataset or registered source; returns the opened log
    (None when a registered source is selected)."""
    where = where or st.sidebar
    choices = {n: ("dataset", n) for n in dataset_names()}  # label -> what it selects
    for n in source_names():
        label = f"{n} (registered source)"
        while label in choices:  # a dataset named like a source's label
            label += " "
        choices[label] = ("source", n)
    src = current_source()
    current = ("source", src) if src is not None else ("dataset", current_name())
    labels = list(choices)
    chosen = choices[where.selectbox(
        "Dataset", labels, index=list(choices.values()).index(current),
        help="Every page works on this dataset. Upload more, or register a Parquet lake or "
             "Spark table, on the Data page.")]
    if chosen != current:
        if chosen[0] == "source":
            set_current_source(chosen[1])
        else:
            set_current(chosen[1])
        st.rerun()
    flash = st.session_state.pop("_ulr_flash", None)
    if flash:
        st.warning(flash)
    return None if src is not None else current_log()


@contextlib.contextmanager
def user_errors(prefix: str = ""):
    """Show a :class:`UlrError` as a readable error box instead of a traceback."""
    ensure_app_run()
    try:
        yield
    except UlrError as exc:
        st.error(f"{prefix}{exc}".strip())


def download_csv(df: pd.DataFrame, file_name: str, label: str = "Download CSV",
                 *, key: str | None = None) -> None:
    """CSV download with spreadsheet-formula cells neutralized."""
    st.download_button(label, data=safe_csv_bytes(df), file_name=file_name, mime="text/csv",
                       key=key or f"dl_{file_name}")


REPORT_KEY = "report_id"

# ---------------------------------------------------------------- who is acting (report owners)
#
# With Streamlit's authentication configured ([auth] in secrets.toml) the identity is the
# signed-in user (issuer + subject of the OIDC ID token); editing needs sign-in. Without it,
# each browser keeps a random token in a cookie the app sets once (a first-party cookie,
# read back with st.context.cookies): it survives a refresh and a new tab, is sent by
# nothing but this browser, and never appears in a link. The store only keeps a hash of it.

BROWSER_COOKIE = "ulr_browser"
_IDENTITY_KEY = "_ulr_identity"
_COOKIE_TO_SET = "_ulr_browser_token"
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
    """The acting identity for :mod:`ulr.reports`: the signed-in user when authentication is
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
    identity may read it, else the one this identity changed last, else a new "Untitled
    report" of theirs (saved at once); None with nobody signed in and no readable link."""
    from ulr import reports

    actor = identity()
    rid = st.session_state.get(REPORT_KEY)
    if rid and reports.get_info(rid, actor=actor) is not None:
        return rid
    wanted = st.query_params.get("report")
    info = reports.get_info(wanted, actor=actor) if wanted else None
    if info is None and actor is not None:
        info = reports.latest_or_new(actor=actor)
    if info is None:
        return None
    st.session_state[REPORT_KEY] = info.id
    return info.id


def set_current_report(report_id: str) -> None:
    st.session_state[REPORT_KEY] = report_id


def _report_to_add_to(actor: str):
    """The session's report when this identity may change it, else the one it changed last
    (a report opened by someone else's link is never added to)."""
    from ulr import reports

    rid = current_report_id()
    info = reports.get_info(rid, actor=actor) if rid else None
    if not reports.can_edit(info, actor=actor):
        info = reports.latest_or_new(actor=actor)
        set_current_report(info.id)
    return info


def add_to_report(title: str, *, fig=None, table: pd.DataFrame | None = None,
                  settings: dict | None = None, caveats: list[str] | None = None,
                  evidence: dict | None = None, takeaway: str | None = None,
                  key: str, verdict=None) -> None:
    """An "Add to report" button that saves this result in the session's report.

    ``verdict`` (a :class:`ulr.verdict.Verdict`) is stored with the item; its
    takeaway pre-fills an empty ``takeaway``, so page, report and slide agree.

    ``caveats`` are the warnings the page shows next to the result (word for
    word), ``evidence`` what it rests on (rows, clicks, queries, sessions) and
    ``takeaway`` a one-line plain-words summary (pre-filled from the result when
    empty); reports and exports carry all three. The item is written to the
    store at once with the dataset's content hash, so it survives a refresh and
    a restart, and a later change of the dataset is flagged on it; a result of
    simulated data is saved with provenance "simulated" and no dataset. It goes to a
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

        # Results of simulated data (Severity sweep, simulated OPE study, Debiased
        # recommendations' worlds, Bandit lab's kveton/linear environments) carry no
        # dataset: a later change of the dataset in use says nothing about them.
        env = (settings or {}).get("environment")
        simulated = key in ("severity_sweep", "ope_sim", "recs") or (
            key == "bandit_lab" and isinstance(env, dict) and env.get("env") != "data")
        name, content_hash = "", ""
        if not simulated and st.session_state.get(SOURCE_KEY):  # no hash to track
            name = f"{st.session_state[SOURCE_KEY]} (registered source)"
        elif not simulated:
            name = st.session_state.get(DATASET_KEY, store.SAMPLE_NAME)
            try:
                content_hash = store.get_dataset(cursor(), name).content_hash or ""
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
            where = "the report" if target.id == viewed else f"your report “{target.name}”"
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


def url_param(name: str, default, *, kind=str):
    """A page setting from the shareable URL (``?name=value``), else ``default``.

    ``kind`` is ``str``, ``int``, ``float``, ``bool`` or ``list`` (comma-separated
    strings) or ``"floats"`` (comma-separated numbers). A value that does not
    parse falls back to the default.
    """
    ensure_app_run()
    raw = st.query_params.get(name)
    if raw is None:
        return default
    try:
        if kind == "floats":
            return [float(v) for v in raw.split(",") if v.strip()] or default
        if kind is list:
            return [v for v in raw.split(",") if v] or default
        if kind is bool:
            return raw.lower() in ("1", "true", "yes", "on")
        return kind(raw)
    except ValueError:
        return default


# Operator settings: the most expensive work one visitor (or one shared link) can start.
# Each is an environment variable holding a positive integer; the value here is its default.
LIMITS = {
    "ULR_MAX_BOOTSTRAP": 200,   # bootstrap replicates per estimate
    "ULR_MAX_METHODS": 3,       # methods / learners / policies / estimators in one run
    "ULR_MAX_RUNS": 50,         # repeated simulation runs
    "ULR_MAX_STEPS": 100_000,   # rounds / steps of one simulation
}


def limit(env: str) -> int:
    """The operator's cap ``env`` (see :data:`LIMITS`); a missing or bad value is the default."""
    try:
        v = int(os.environ.get(env, ""))
    except ValueError:
        return LIMITS[env]
    return v if v >= 1 else LIMITS[env]


def _lowered(name: str, asked, cap: int, env: str, what: str) -> None:
    st.info(f"The link asks for {asked} {what}; this server allows at most {cap} "
            f"(operator setting {env}), so {cap} {'is' if cap == 1 else 'are'} used.")


def url_number(name: str, default, lo, hi, *, kind=int, cap: str | None = None,
               what: str | None = None):
    """A number from the shareable URL, or ``default`` when missing, NaN or out of [lo, hi].

    With ``cap`` (an operator setting in :data:`LIMITS`) below ``hi``, ``hi`` is
    that limit, and a URL value above it is lowered to it with one sentence
    (``what`` names the unit, e.g. "bootstrap replicates"); the default is capped
    silently. Pass the widget's own ``max_value`` as ``min(hi, limit(cap))``.
    """
    v = url_param(name, default, kind=kind)
    if cap is not None and limit(cap) < hi:
        hi = limit(cap)
        default = min(default, hi)
        if v == v and v > hi and name in st.query_params:
            _lowered(name, v, hi, cap, what or name)
            return kind(hi)
    return v if lo <= v <= hi else default


def url_index(name: str, options, default=None) -> int:
    """Index in ``options`` of the URL's choice, else of ``default`` (else 0): for selectboxes."""
    options = list(options)
    v = url_param(name, default)
    if v in options:
        return options.index(v)
    return options.index(default) if default in options else 0


def url_options(name: str, options, default, *, cap: str | None = None,
                what: str | None = None) -> list:
    """The URL's comma-separated choices that are in ``options``, else ``default``: for
    multiselects (unknown names in a shared link are dropped, not an error).

    With ``cap`` (an operator setting in :data:`LIMITS`), a link naming more
    choices keeps the first ones allowed, with one sentence (``what`` names them).
    """
    linked = list(dict.fromkeys(v for v in url_param(name, [], kind=list) if v in options))
    chosen = linked or list(default)
    if cap is not None and len(chosen) > limit(cap):
        if linked:  # a default above an operator's low cap is cut silently
            _lowered(name, len(chosen), limit(cap), cap, what or name)
        chosen = chosen[:limit(cap)]
    return chosen


@contextlib.contextmanager
def cancellable():
    """A ``should_stop`` for ulr's long loops that ends with this script run.

    Streamlit ends a session's script run when its tab closes, when the visitor
    changes a control (a new run of the session) and when the server shuts down:
    it raises from the next ``st.*`` call. ulr's loops make no such call, so
    ``should_stop`` makes one that shows nothing (a ``st.session_state`` lookup).
    When Streamlit raises there, ``should_stop`` keeps its exception and says
    yes; ulr then raises :class:`ulr.errors.Cancelled`, and leaving this block
    raises Streamlit's exception again, so the run ends (or reruns) the way
    Streamlit meant::

        with ui.cancellable() as stop:
            result = propensity.estimate(log, ..., should_stop=stop)

    A cached function takes it as an unhashed argument (``_should_stop``).
    """
    pending: list[BaseException] = []

    def should_stop() -> bool:
        if pending:
            return True
        try:
            "_ulr_alive" in st.session_state  # noqa: B015 - a Streamlit check point
        except BaseException as exc:  # noqa: BLE001 - Streamlit's stop or rerun request
            pending.append(exc)
            return True
        return False

    try:
        yield should_stop
    except Cancelled:
        if pending:
            raise pending[0] from None
        raise


def set_url_params(**values) -> None:
    """Write the page's key settings to the URL so the link reproduces the view."""
    for k, v in values.items():
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            v = ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v)
        elif isinstance(v, bool):
            v = "1" if v else "0"
        elif isinstance(v, float):
            v = f"{v:g}"
        if st.query_params.get(k) != str(v):
            st.query_params[k] = str(v)
    name = st.session_state.get(DATASET_KEY)
    if name and st.query_params.get("dataset") != name:
        st.query_params["dataset"] = name
    src = st.session_state.get(SOURCE_KEY)
    if src and st.query_params.get("source") != src:
        st.query_params["source"] = src


def dead_end(sentence: str, *, link: str = "pages/data.py",
             label: str = "Fix it in the Data page's column mapping", level: str = "warning"):
    """One sentence on what is missing, and a link to where it is fixed (byol, #11)."""
    getattr(st, level)(sentence)
    try:
        st.page_link(link, label=label, icon=":material/arrow_forward:")
    except Exception:  # a page run on its own (no navigation): name the place instead
        st.caption(f"→ {label}")


# ---------------------------------------------------------------- verdicts (docs/verdicts.md)

VERDICT_COLORS = {"reliable": "green", "directional": "orange", "inconclusive": "gray",
                  "invalid": "red"}
VERDICT_ICONS = {"reliable": ":material/check_circle:", "directional": ":material/trending_up:",
                 "inconclusive": ":material/help:", "invalid": ":material/block:"}


def show_verdict(v, *, key: str | None = None) -> None:
    """The result's verdict first: a badge with its level, the one-sentence takeaway,
    and (folded) the reasons and what would settle it."""
    with st.container(key=f"verdict_{key}" if key else None):
        st.badge(v.label, icon=VERDICT_ICONS[v.level], color=VERDICT_COLORS[v.level])
        st.markdown(f"**{v.takeaway}**")
        if v.reasons or v.to_settle:
            with st.expander("Why this verdict"):
                for r in v.reasons:
                    st.markdown(f"- {r.message}")
                if v.to_settle:
                    st.markdown(f"To settle it: {v.to_settle}.")


@cache_data(show_spinner=False, max_entries=64)
def _mapping_warnings(content_hash: str, name: str) -> tuple:
    from ulr.lists import mapping_warnings
    return mapping_warnings(store.open_dataset(name, cur=cursor()))


def mapping_warnings(log) -> tuple:
    """The mapping checks of a stored dataset (docs/verdicts.md §3), cached per content."""
    try:
        return _mapping_warnings(log.info.content_hash or "", log.info.name)
    except UlrError:
        return ()


def mapping_stops(log, analysis: str, what: str) -> bool:
    """Say which mapping warning stops ``analysis`` and link to the mapping; True if stopped."""
    from ulr.lists import blocking
    stops = blocking(mapping_warnings(log), analysis)
    for w in stops:
        dead_end(f"{what} needs shown lists, and this log's mapping does not group them: "
                 f"{w.message}", label="Fix the mapping on the Data page")
    return bool(stops)
