"""The system browser (ulr.report.browser): BROWSER_PATH, the sentences when static export
cannot run, and export folders: a killed export's browser and temp folder are removed by the next export,
and a timed-out export kills its whole browser process group.

A fake browser (a Python script) stands in for Chromium: it writes the PDF, or hangs
with a child process, so no real Chromium is started or left behind.
"""

import os
import subprocess
import sys
import importlib.util
import tempfile
import time

import plotly.graph_objects as go
import pytest

from ulr import report
from ulr.errors import UlrError

FAKE = '''#!{python}
import os, subprocess, sys, time
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--print-to-pdf="))
if os.environ.get("FAKE_BROWSER") == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    open(os.environ["FAKE_PIDS"], "w").write(f"{{os.getpid()}} {{child.pid}}")
    time.sleep(300)
open(out, "wb").write(b"%PDF-1.4 fake")
'''


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.time() + seconds
    while alive(pid) and time.time() < deadline:
        time.sleep(0.05)
    return not alive(pid)


@pytest.fixture
def tmp_root(tmp_path, monkeypatch):
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


@pytest.fixture
def fake_browser(tmp_path):
    path = tmp_path / "fake-chromium"
    path.write_text(FAKE.format(python=sys.executable))
    path.chmod(0o755)
    return str(path)


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_the_next_export_removes_a_killed_exports_folder_and_browser(tmp_root, fake_browser):
    orphan = tmp_root / f"{report.EXPORT_PREFIX}killed1"
    (orphan / "profile").mkdir(parents=True)
    (orphan / "profile" / "big.bin").write_bytes(b"\0" * 100_000)
    (orphan / "owner.pid").write_text(f"{dead_pid()} 1")
    # The killed export's "Chromium", still running with its profile in the folder.
    browser = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)",
                                f"--user-data-dir={orphan}/profile"])
    live = tmp_root / f"{report.EXPORT_PREFIX}running"  # another live export: kept
    live.mkdir()
    (live / "owner.pid").write_text(f"{os.getpid()} {report._start_time(os.getpid())}")
    try:
        pdf = report.html_to_pdf("<p>hello</p>", browser=fake_browser)
        assert pdf.startswith(b"%PDF")
        assert browser.wait(5) is not None  # killed
        assert not orphan.exists()
        assert live.exists()
        assert [p.name for p in tmp_root.iterdir()] == [live.name]  # its own folder is gone too
    finally:
        browser.kill()
        browser.wait()


def test_a_timed_out_export_kills_its_browser_group_and_removes_its_folder(
        tmp_root, fake_browser, tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    monkeypatch.setenv("FAKE_BROWSER", "hang")
    monkeypatch.setenv("FAKE_PIDS", str(pids))
    with pytest.raises(UlrError, match="did not finish the PDF within 2 s"):
        report.html_to_pdf("<p>slow</p>", browser=fake_browser, timeout=2)
    main, child = map(int, pids.read_text().split())
    assert wait_gone(main) and wait_gone(child)
    assert list(tmp_root.iterdir()) == []


def test_a_cancelled_export_kills_its_browser_group_at_once(tmp_root, fake_browser, tmp_path,
                                                            monkeypatch):
    from ulr.errors import Cancelled

    pids = tmp_path / "pids"
    monkeypatch.setenv("FAKE_BROWSER", "hang")
    monkeypatch.setenv("FAKE_PIDS", str(pids))
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        report.html_to_pdf("<p>left</p>", browser=fake_browser,
                           should_stop=lambda: pids.exists())  # the visitor left
    assert time.monotonic() - t0 < 30  # not the 120 s timeout
    main, child = map(int, pids.read_text().split())
    assert wait_gone(main) and wait_gone(child)
    assert list(tmp_root.iterdir()) == []


def test_find_browser_honours_browser_path(tmp_path, monkeypatch):
    exe = tmp_path / "my-chrome"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("BROWSER_PATH", str(exe))
    assert report.find_browser() == str(exe)
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "missing"))
    assert report.find_browser() != str(tmp_path / "missing")


def test_static_export_problems_are_sentences(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda n, *a: None if n == "kaleido" else real_find_spec(n, *a))
    assert "kaleido" in report.static_export_problem()
    with pytest.raises(UlrError, match="kaleido"):
        report.to_image(go.Figure())
    monkeypatch.undo()
    monkeypatch.setattr(report.browser, "find_browser", lambda: None)
    if importlib.util.find_spec("kaleido") is not None:
        assert "Chromium" in report.static_export_problem()
        with pytest.raises(UlrError, match="Chromium"):
            report.to_image(go.Figure())
