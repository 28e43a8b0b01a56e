"""Real-browser fixtures: `streamlit run app.py` on a free port + headless Debian Chromium.

The browser is the system one at /usr/bin/chromium (installed by .ci/run with apt-get);
nothing is ever downloaded. Without it the tests are skipped locally but fail under CI.
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import visitor_tab
from tests.e2e.helpers import shot

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# On a busy machine a click's rerun can start after wait_idle's settle time, so an
# assertion may look before the page has redrawn; Playwright's 5 s default then fails
# a correct page. Assertions that hold pass as soon as they hold; only a failure waits.
expect.set_options(timeout=20_000)


class ServedUrl(str):
    """The app's base URL; ``.db`` is the store the server uses (ULR_DB), ``.proc`` the
    server process."""

    db: str
    proc: subprocess.Popen


def _serve(*extra, roots: str = ""):
    """Serve app.py; ``extra`` are more ``streamlit run`` options (e.g. ``--secrets.files``),
    ``roots`` the folders the browser may register sources from (ULR_DATA_ROOTS)."""
    port = _free_port()
    env = dict(os.environ)
    env["ULR_DB"] = os.path.join(tempfile.mkdtemp(prefix="ulr_e2e_"), "e2e.duckdb")
    env["ULR_DATA_ROOTS"] = roots  # folders the browser may register sources from
    # the Bandit lab journey needs a run that cannot end while it pauses and resumes
    # (100,000 steps, the default cap, ran out on a quiet machine)
    env["ULR_MAX_STEPS"] = "1000000"
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
         "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none", *extra],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = ServedUrl(f"http://127.0.0.1:{port}")
    url.db = env["ULR_DB"]
    url.proc = proc
    wait_for(url + "/_stcore/health", proc, "streamlit", timeout=60)
    try:
        yield url
    finally:
        stop(proc)


def wait_for(url: str, proc: subprocess.Popen, what: str, *, timeout: float) -> None:
    """Wait until ``url`` answers 200; a process that exits or a timeout stops the tests."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise RuntimeError(f"{what} exited before it answered: {out}")
    stop(proc)
    raise RuntimeError(f"{what} did not answer within {timeout:g} s")


def stop(proc: subprocess.Popen) -> None:
    """Terminate a served process; kill it if it has not ended 10 s later."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """The shared server; the browser may register files under the tests' temporary folders."""
    yield from _serve(roots=str(tmp_path_factory.getbasetemp()))


@pytest.fixture
def fresh_app_url():
    """A server no session has visited yet (for first-visit deep links)."""
    yield from _serve()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test (``item.failed_call``) for ``page``'s teardown."""
    report = yield
    if report.when == "call":
        item.failed_call = report.failed
    return report


@pytest.fixture
def page(warm_context, app_url, request):
    """A new visitor's tab (see tests.conftest.visitor_tab); if the test fails, its page as
    it was then is kept in tests/artifacts/failed_TEST.png."""
    with visitor_tab(warm_context, width=1400, height=1000, timeout_ms=30_000) as pg:
        yield pg
        if getattr(request.node, "failed_call", False) and pg.url.startswith("http"):
            from playwright.sync_api import Error as PlaywrightError
            try:
                shot(pg, "failed_" + re.sub(r"\W+", "_", request.node.name), always=True)
            except PlaywrightError:  # the tab crashed: the failure says why
                pass
