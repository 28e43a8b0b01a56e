"""Test set-up: every test session works on its own throw-away database."""

import contextlib
import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_TMP = tempfile.mkdtemp(prefix="ulr_test_")
os.environ.setdefault("ULR_DB", os.path.join(_TMP, "ulr_test.duckdb"))
if os.environ.get("PYTEST_XDIST_WORKER"):
    # pytest-xdist workers inherit the controller's environment: each gets its own store
    os.environ["ULR_DB"] = os.path.join(_TMP, "ulr_test.duckdb")
os.environ.setdefault("ULR_MEMORY_LIMIT", "2GB")
# Every JVM the tests start (the Spark fixture's, the CLI's, the app's) is short-lived and
# reads small data, so compiling Spark's code with C2 is wasted: C1 alone and the serial
# collector halve its CPU (a Spark CLI run: 27 CPU-s to 13). The suite is CPU-bound on two
# cores. The product's own JVM settings are untouched.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
# One OpenMP thread per test process (and per CLI run and app server it starts): pytest-xdist
# already runs one worker per core, and OpenMP's spinning threads on a busy machine made the
# reward models' GBDT fits eight times slower (tests/ope/test_reward_models.py: 246 s with
# the default threads, 31 s with one, the same load; issue 53). scikit-learn's histogram
# GBDT gives the same trees whatever the thread count.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# No report pictures drawn in the background after a save (ulr.report.ahead) in the test
# processes or in the servers and CLI runs they start: each would start a Chromium on the
# two cores; the tests that check that drawing turn it on themselves.
os.environ.setdefault("ULR_DRAW_AHEAD", "0")

CHROMIUM = "/usr/bin/chromium"

# ---------------------------------------------------------------------------
# Markers (pytest.ini): the suite in pieces
# ---------------------------------------------------------------------------

#: the tests measured over ~5 s (one node id, a node id without its parameters, or a whole
#: file per line; ``#`` starts a comment): marked ``slow`` here rather than file by file
SLOW_LIST = ROOT / "tests" / "slow_tests.txt"
_BROWSER_FIXTURES = {"browser", "warm_context", "_playwright", "page", "app_url"}


def slow_entries() -> list[str]:
    """The entries of :data:`SLOW_LIST`, comments and blank lines dropped."""
    lines = (line.split("#", 1)[0].strip() for line in SLOW_LIST.read_text().splitlines())
    return [line for line in lines if line]


_SOURCES: dict = {}


def _source(item) -> str:
    """The text of the test's module (read once per module)."""
    path = str(getattr(item, "path", "") or item.fspath)
    if path not in _SOURCES:
        try:
            _SOURCES[path] = Path(path).read_text()
        except OSError:
            _SOURCES[path] = ""
    return _SOURCES[path]


def pytest_collection_modifyitems(config, items):
    """Mark ``slow`` the tests of :data:`SLOW_LIST`, ``e2e`` and ``browser`` the tests under
    ``tests/e2e`` and those that drive Chromium, ``spark`` those that start a JVM, ``cli``
    those under ``tests/commands``, using the ``cli`` fixture or in a module that runs
    ``python -m ulr``, and ``apptest`` those in a module that drives pages with Streamlit's
    AppTest."""
    slow = set(slow_entries())
    for item in items:
        text = _source(item)
        path0 = item.nodeid.split("::", 1)[0]
        if path0.startswith("tests/commands/") or "cli" in getattr(item, "fixturenames", ()) \
                or '"-m", "ulr"' in text:
            item.add_marker(pytest.mark.cli)
        if "AppTest" in text:
            item.add_marker(pytest.mark.apptest)
        nodeid = item.nodeid
        path = nodeid.split("::", 1)[0]
        if {nodeid, nodeid.split("[", 1)[0], path} & slow:
            item.add_marker(pytest.mark.slow)
        in_e2e = path.startswith("tests/e2e/")
        if in_e2e and item.get_closest_marker("e2e") is None:
            item.add_marker(pytest.mark.e2e)
        if in_e2e or item.get_closest_marker("e2e") is not None or (
                _BROWSER_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.browser)
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
    _longest_files_first(items)


def _longest_files_first(items) -> None:
    """Order the files by a rough cost, the longest first (the order within a file kept).

    pytest-xdist hands out whole files (``--dist loadfile``), by default the files with
    the most tests first (``--no-loadscope-reorder`` in pytest.ini turns that off): the
    one-test browser journeys of a minute or two came last, where one worker can run them
    while the other has finished (not measured apart). Longest first, the short files fill the end. The cost is a
    guess from the markers: a browser test ~30 s, another slow test ~10 s, any other 0.3 s.
    """
    cost: dict = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        cost[path] = cost.get(path, 0.0) + (
            30.0 if item.get_closest_marker("browser") else
            10.0 if item.get_closest_marker("slow") else 0.3)
    order = {path: i for i, path in enumerate(sorted(cost, key=lambda p: -cost[p]))}
    items.sort(key=lambda item: order[item.nodeid.split("::", 1)[0]])

# Streamlit animates its "running" indicator and fades elements in and out: in a headless
# browser every animated frame is drawn in software, for every open page, all the while
# the server computes (a waiting page's CPU fell five-fold without them). The tests look
# at what is drawn, not at how it moves.
_NO_MOTION_JS = """document.addEventListener('DOMContentLoaded', () => {
  const s = document.createElement('style');
  s.textContent = '*, *::before, *::after { animation: none !important; ' +
                  'transition: none !important; }';
  document.head.appendChild(s);
});"""


_CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="session")
def _playwright():
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (see .ci/run)")
        pytest.skip("no system Chromium at /usr/bin/chromium")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def warm_context(_playwright, tmp_path_factory):
    """One Chromium profile on disk for the tests that need one fresh visitor each (the
    ``page`` fixture clears its cookies and storage between tests, so each test is a new
    browser to the app). Its disk cache keeps V8's compiled code of Streamlit's and Plotly's
    scripts from one page to the next, which an in-memory context recompiles on every
    page: a page load costs the browser about half the CPU (the suite is CPU-bound)."""
    ctx = _playwright.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium_profile")), executable_path=CHROMIUM,
        headless=True, args=_CHROMIUM_ARGS, accept_downloads=True)
    ctx.add_init_script(_NO_MOTION_JS)
    yield ctx
    ctx.close()


@contextlib.contextmanager
def visitor_tab(ctx, *, width: int, height: int, timeout_ms: int):
    """A new tab of ``warm_context`` as a first-time visitor: no cookie (so a new browser
    identity to the app) and no stored page state, before and after."""
    from playwright.sync_api import Error as PlaywrightError
    ctx.clear_cookies()
    pg = ctx.new_page()
    pg.set_viewport_size({"width": width, "height": height})
    pg.set_default_timeout(timeout_ms)
    try:
        yield pg
    finally:
        if pg.url.startswith("http"):
            try:
                pg.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
            except PlaywrightError:  # the tab crashed or is navigating: nothing to keep
                pass
        pg.close()
        ctx.clear_cookies()


@pytest.fixture(scope="session")
def browser(_playwright):
    """One headless Debian Chromium for the whole test session (never downloaded); its
    contexts are in memory, one per identity a test needs at once."""
    b = _playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=_CHROMIUM_ARGS)
    new_context = b.new_context

    def still_context(*args, **kwargs):
        ctx = new_context(*args, **kwargs)
        ctx.add_init_script(_NO_MOTION_JS)
        return ctx
    b.new_context = still_context
    yield b
    b.close()




# ---------------------------------------------------------------------------
# Shared helpers: one CLI harness and one `open_df` for every test file
# ---------------------------------------------------------------------------


class CliResult(tuple):
    """``(rc, out, err)`` of one command, also readable as ``.rc``, ``.out``, ``.err``."""

    def __new__(cls, rc, out, err):
        return super().__new__(cls, (rc, out, err))

    rc = property(lambda self: self[0])
    out = property(lambda self: self[1])
    err = property(lambda self: self[2])


def assert_user_error(result, needle: str = "") -> None:
    """docs/contract.md §2: status 2, nothing on stdout, one ``error: ...`` line on stderr."""
    rc, out, err = result
    assert rc == 2, (rc, out, err)
    assert out == "", out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert needle in lines[0], lines[0]
    assert "Traceback" not in err


@pytest.fixture
def cli(capsys):
    """Run ``python -m ulr ARGS`` in this process (a subprocess costs seconds of imports)."""
    from ulr.cli import main

    def run(*args) -> CliResult:
        capsys.readouterr()
        rc = main([str(a) for a in args])
        cap = capsys.readouterr()
        return CliResult(rc, cap.out, cap.err)
    return run


@pytest.fixture
def cli_process():
    """Run ``python -m ulr ARGS`` in a real process (for what only a process shows)."""
    import subprocess

    # a cap, not a wait: the command returns as soon as it ends (a Spark JVM on a loaded
    # two-core machine has needed over 180 s)
    def run(*args, cwd=None, timeout=600) -> CliResult:
        p = subprocess.run([sys.executable, "-m", "ulr", *map(str, args)], capture_output=True,
                           text=True, cwd=cwd or ROOT, timeout=timeout)
        return CliResult(p.returncode, p.stdout, p.stderr)
    return run


@pytest.fixture
def open_df(tmp_path):
    """``open_df(df, name="log.parquet")``: write a frame and open it as the CLI would."""
    from ulr.data import ingest
    from ulr.simulate import write_log

    def open_(df, name: str = "log.parquet"):
        path = tmp_path / name
        write_log(df, str(path))
        return ingest.open_file(path)
    return open_


@pytest.fixture
def user_error():
    """The :func:`assert_user_error` check, as a fixture."""
    return assert_user_error


@pytest.fixture
def parquet_lake(tmp_path):
    """``parquet_lake(df, days)``: a folder of ``days`` Parquet files (day0, day1, ...) that
    split the log's rows in order, as a data lake partitions a log by day."""
    import numpy as np

    def write(df, days: int):
        lake = tmp_path / "lake"
        lake.mkdir()
        for i, rows in enumerate(np.array_split(np.arange(len(df)), days)):
            df.iloc[rows].to_parquet(lake / f"day{i}.parquet")
        return lake
    return write
