"""Page helpers of pages/_ui.py that hold no page of their own."""

import ast
import os
import threading
import time
from pathlib import Path

import pandas as pd

from pages import _ui as ui
from ulr.data import catalog


def _wait_on_the_store(db: str, body, *, noticed: bool) -> list:
    """Run ``body`` while another thread holds the store's lock; the wait notices the
    dashboard's callback would have shown. The lock is let go once the notice is recorded
    (``noticed``), else after 0.5 s: that no notice comes can only be seen by waiting."""
    notices = []
    held, seen = threading.Event(), threading.Event()

    def holder():
        with catalog.catalog(db):
            held.set()
            seen.wait(60 if noticed else 0.5)

    def notice(waited):
        notices.append(waited)
        seen.set()

    t = threading.Thread(target=holder)
    t.start()
    held.wait()
    with catalog.waiting(notice):
        body()
    t.join()
    return notices


def test_cached_page_work_never_records_the_wait_notice(tmp_path):
    """A toast shown inside a cached function cannot be replayed by the next session
    (CacheReplayClosureError on a cold server); the page cache runs without it."""
    db = str(tmp_path / "ui.duckdb")
    with catalog.catalog(db):
        pass

    def read_catalog(key: str) -> int:
        with catalog.catalog(db):
            return len(key)

    cached = ui.cache_data(show_spinner=False)(read_catalog)
    assert _wait_on_the_store(db, lambda: read_catalog("plain"), noticed=True)  # it fires
    assert _wait_on_the_store(db, lambda: cached(f"cached-{os.getpid()}"),
                              noticed=False) == []
    assert cached(f"cached-{os.getpid()}") == len(f"cached-{os.getpid()}")


def test_cached_results_are_bounded_and_forgotten_per_dataset():
    """ui.cache_data: shared results expire (a TTL by default) and ui.forget(hash) drops
    one dataset's entries (the Data page calls it on delete and replace), not others'."""
    from pages import _ui as ui
    calls = []

    @ui.cache_data(show_spinner=False, max_entries=8)
    def result(content_hash, x, *, _should_stop=None):
        calls.append((content_hash, x))
        return x

    for _ in range(2):
        assert result("h1", 1, _should_stop=object()) == 1 and result("h2", 1) == 1
    assert calls == [("h1", 1), ("h2", 1)]
    ui.forget("h1")
    result("h1", 1)
    result("h2", 1)
    assert calls == [("h1", 1), ("h2", 1), ("h1", 1)]
    assert len(ui._BY_DATASET["h1"]) == 1          # the stop callable is not part of the key

    runs = []

    @ui.cache_data(show_spinner=False, max_entries=8)
    def later(source, content_hash, x):             # the hash need not come first (OPE)
        runs.append(content_hash)
        return x

    later("log", "h3", 1)
    later("log", "h3", 1)
    assert runs == ["h3"]
    ui.forget("h3")
    later("log", "h3", 1)
    assert runs == ["h3", "h3"]


def test_a_figure_is_built_once_for_every_session():
    from pages import _ui as ui
    from ulr.plots import ctr_by_position_figure
    ctr = pd.DataFrame({"position": [1, 2], "impressions": [100, 100], "clicks": [10, 5],
                        "ctr": [0.1, 0.05], "lower": [0.05, 0.02], "upper": [0.17, 0.11]})
    a = ui.figure(ctr_by_position_figure, ctr)
    assert ui.figure(ctr_by_position_figure, ctr.copy()) is a      # same content: shared
    other = ctr.assign(clicks=[20, 5], ctr=[0.2, 0.05])
    assert ui.figure(ctr_by_position_figure, other) is not a


def test_the_helper_package_finds_the_app_and_every_page():
    """pages/_ui is a package now: its paths are one level deeper, and the page list
    app.py navigates by must still name the entry script and existing files."""
    from pages import _ui as ui
    from pages._ui import nav
    assert ui.APP.name == "app.py" and ui.APP.is_file() and ui.ROOT == ui.APP.parent
    assert all((ui.ROOT / f).is_file() for f, *_ in ui.PAGES)
    assert ui.add_to_report.__module__ == "pages._ui.reporting"
    assert nav._in_folder_mode_run() is False   # no Streamlit runner on this stack


def _bare_expressions(path):
    """Statements that are a value alone (not a call, not a docstring): what Streamlit's
    "magic" would have drawn."""
    import ast
    tree = ast.parse(path.read_text(), filename=str(path))
    return [f"{path.name}:{node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.Expr)
            and not isinstance(node.value, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom))
            and not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str))]


def test_the_server_config_keeps_a_view_cheap_and_no_page_relies_on_magic():
    """Two runner options cut what every script run costs the server: no "magic" (which
    rewrites each page's syntax tree when Streamlit compiles it) and no forced full garbage
    collection after each run (50-130 ms holding the GIL). Without magic a bare value on a
    page would silently show nothing, so no page may have one (magic only ever applied to
    the scripts Streamlit runs, not to the modules they import)."""
    import tomllib
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    runner = tomllib.loads((root / ".streamlit" / "config.toml").read_text())["runner"]
    assert runner["magicEnabled"] is False
    assert runner["postScriptGC"] is False
    files = [root / "app.py", *sorted((root / "pages").glob("[!_]*.py"))]
    assert len(files) > 10
    assert [hit for f in files for hit in _bare_expressions(f)] == []


def test_cached_only_reads_a_held_value_and_never_computes_one():
    calls = []

    @ui.cache_data(show_spinner=False, max_entries=8)
    def work(content_hash, x):
        calls.append(x)
        return x * 10

    key = f"peek-{time.time_ns()}"
    assert ui.cached_only(lambda: work(key, 1)) == (False, None)
    assert calls == []                                  # nothing computed, nothing stored
    assert work(key, 1) == 10 and calls == [1]
    assert ui.cached_only(lambda: work(key, 1)) == (True, 10)
    assert ui.cached_only(lambda: work(key, 2)) == (False, None)
    assert calls == [1]
    assert work(key, 2) == 20 and calls == [1, 2]      # asking left normal calls as they were


def test_a_run_writes_its_settings_to_the_url_in_one_message(monkeypatch):
    """Each write of st.query_params sends the browser a message; the Off-policy page
    has eight settings in its link and sends them in one."""
    from pathlib import Path

    from streamlit.runtime.state.query_params import QueryParams
    from streamlit.testing.v1 import AppTest
    sent = []
    real = QueryParams._send_query_param_msg
    monkeypatch.setattr(QueryParams, "_send_query_param_msg",
                        lambda self: (sent.append(dict(self._query_params)), real(self))[1])
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"),
                           default_timeout=120)
    at.run()
    sent.clear()
    at.switch_page("pages/off_policy.py").run()
    assert not at.exception, at.exception
    assert len(sent) == 1
    assert {"view", "dataset", "target", "temperature", "action", "estimators", "seed"} <= set(sent[0])
    sent.clear()
    at.run()                                   # nothing changed: nothing sent
    assert sent == []


# ---------------------------------------------------------------- session keys, named once

PAGES_DIR = Path(__file__).resolve().parents[2] / "pages"
KEYS_FILE = PAGES_DIR / "_ui" / "keys.py"


def _is_state(node, aliases) -> bool:
    """``st.session_state`` or a name bound to it."""
    return ((isinstance(node, ast.Attribute) and node.attr == "session_state")
            or (isinstance(node, ast.Name) and node.id in aliases))


def session_keys(source: str) -> tuple[set, set]:
    """(keys a file spells as string literals in a session-state position, the subset of
    those that are reads or writes of ``st.session_state`` itself rather than a ``key=``)."""
    tree = ast.parse(source)
    aliases = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign)
               and _is_state(n.value, ()) for t in n.targets if isinstance(t, ast.Name)}
    direct, widget = set(), set()

    def literal(node):
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) \
            else None

    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and _is_state(n.value, aliases):
            direct.add(literal(n.slice))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr in ("get", "pop", "setdefault") and _is_state(n.func.value, aliases)
              and n.args):
            direct.add(literal(n.args[0]))
        elif (isinstance(n, ast.Compare) and isinstance(n.ops[0], (ast.In, ast.NotIn))
              and _is_state(n.comparators[0], aliases)):
            direct.add(literal(n.left))
        elif isinstance(n, ast.keyword) and n.arg == "key":
            widget.add(literal(n.value))
    direct.discard(None)
    widget.discard(None)
    return direct | widget, direct


def test_the_key_finder_sees_every_way_to_name_a_key():
    spelled, direct = session_keys(
        "S = st.session_state\nS['a']\nst.session_state.get('b')\n'c' in st.session_state\n"
        "S.pop('d', None)\nst.button('x', key='e')\nst.session_state[keys.F]\nq.get('g')\n")
    assert (spelled, direct) == ({"a", "b", "c", "d", "e"}, {"a", "b", "c", "d"})


def test_every_session_key_is_spelled_in_one_file_of_pages():
    tree = ast.parse(KEYS_FILE.read_text())
    where = {n.value.value: {"pages/_ui/keys.py"} for n in tree.body
             if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)}
    literal_access = {}
    for f in sorted(PAGES_DIR.rglob("*.py")) + [PAGES_DIR.parent / "app.py"]:
        if f == KEYS_FILE:
            continue
        spelled, direct = session_keys(f.read_text())
        name = f.relative_to(PAGES_DIR.parent).as_posix()
        for k in spelled:
            where.setdefault(k, set()).add(name)
        if direct:
            literal_access[name] = sorted(direct)
    assert len(where) > 40
    assert {k: sorted(v) for k, v in where.items() if len(v) > 1} == {}
    # the state itself is read and written through the names of pages/_ui/keys.py
    assert literal_access == {}
