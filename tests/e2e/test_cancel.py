"""Work ends with its visitor: a closed tab, a changed control or SIGTERM stops a heavy
estimate at once.

A served app gets a 20k-row simulated log (one server for the closed tab and the changed
control, one for SIGTERM); Position bias with DLA and 1,000 bootstrap replicates on it
takes minutes (a fit takes a fifth of a second), while the run that replaces it (no
replicates) takes a second: the tests wait on the work they stop, not on the work that
follows. The server's own CPU time (from /proc, not the machine's load: other jobs share
the cores) shows whether it still computes.
"""

import os
import signal
import time

import pytest

from tests.conftest import visitor_tab
from tests.e2e.conftest import _serve
from ulr import simulate
from ulr.data import ingest

HEAVY = "/position_bias?dataset=big&propensity=dla&bootstrap=1000"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of the process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def cpu_over(pid: int, seconds: float) -> float:
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return cpu_seconds(pid) - before


def wait_busy(pid: int, timeout: float = 180) -> None:
    """Until the server burns a tenth of a core or more over 2 s (its estimate is running;
    with other processes on the machine it may get far less than a whole core)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cpu_over(pid, 2.0) > 0.2:
            return
    pytest.fail("the heavy page never made the server busy")


def _big(url, folder):
    sim = simulate.simulate_clicks(queries=2000, sessions=2_000, positions=10, seed=1)
    path = folder / "big.parquet"
    sim.df.to_parquet(path)
    ingest.load_log(path, "big", db_path=url.db)
    return url


@pytest.fixture(scope="module")
def big_app(tmp_path_factory):
    """A server with the big log, for the tests that leave it running (each waits until
    it is idle again before it ends)."""
    for url in _serve():
        yield _big(url, tmp_path_factory.mktemp("big"))


@pytest.fixture
def big_app_to_stop(fresh_app_url, tmp_path):
    """A server with the big log of its own, for the test that stops it."""
    return _big(fresh_app_url, tmp_path)


def _tab(warm_context):
    """A new visitor's tab (see tests.conftest.visitor_tab)."""
    return visitor_tab(warm_context, width=1280, height=720, timeout_ms=30_000)


def test_closing_the_tab_stops_the_computation(warm_context, big_app):
    pid = big_app.proc.pid
    with _tab(warm_context) as pg:
        pg.goto(big_app + HEAVY)
        pg.get_by_text("Estimating position bias").first.wait_for(timeout=60_000)
        wait_busy(pid)
        pg.close()  # the visitor leaves
    closed = time.time()
    while cpu_over(pid, 2.0) > 0.2:  # idle: under 10% of a core over 2 s
        assert time.time() - closed < 10, "the server still computes 10 s after the tab closed"
    assert big_app.proc.poll() is None  # stopped the work, not the server


def test_changing_a_control_stops_the_old_run_at_once(warm_context, big_app):
    pid = big_app.proc.pid
    with _tab(warm_context) as pg:
        pg.goto(big_app + HEAVY)
        pg.get_by_text("Estimating position bias").first.wait_for(timeout=60_000)
        wait_busy(pid)
        boot = pg.get_by_role("spinbutton", name="Bootstrap replicates", exact=True)
        boot.fill("0")
        boot.press("Enter")
        # Streamlit starts the new run at once (fast reruns) and asks the old one to
        # stop; the old one's 1,000 replicates must not go on in the background.
        pg.get_by_text("Estimated 1 of 1 methods").wait_for(timeout=90_000)
        assert "bootstrap=0" in pg.url
        done = time.time()
        while cpu_over(pid, 2.0) > 0.2:
            assert time.time() - done < 10, "the old run still computes after the new one"


def test_sigterm_during_the_run_stops_the_server(warm_context, big_app_to_stop):
    proc = big_app_to_stop.proc
    with _tab(warm_context) as pg:
        pg.goto(big_app_to_stop + HEAVY)
        pg.get_by_text("Estimating position bias").first.wait_for(timeout=60_000)
        wait_busy(proc.pid)
        t0 = time.time()
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)  # raises TimeoutExpired if the server is still alive
        assert time.time() - t0 < 10
