"""Page helpers of pages/_ui.py that hold no page of their own."""

import os
import threading
import time

from pages import _ui as ui
from ulr import store


def _wait_on_the_store(db: str, body) -> list:
    """Run ``body`` while another thread holds the store's lock for 0.5 s; the wait
    notices the dashboard's callback would have shown."""
    notices = []
    held = threading.Event()

    def holder():
        with store.catalog(db):
            held.set()
            time.sleep(0.5)

    t = threading.Thread(target=holder)
    t.start()
    held.wait()
    with store.waiting(notices.append):
        body()
    t.join()
    return notices


def test_cached_page_work_never_records_the_wait_notice(tmp_path):
    """A toast shown inside a cached function cannot be replayed by the next session
    (CacheReplayClosureError on a cold server); the page cache runs without it."""
    db = str(tmp_path / "ui.duckdb")
    with store.catalog(db):
        pass

    def read_catalog(key: str) -> int:
        with store.catalog(db):
            return len(key)

    cached = ui.cache_data(show_spinner=False)(read_catalog)
    assert _wait_on_the_store(db, lambda: read_catalog("plain"))  # the notice fires here
    assert _wait_on_the_store(db, lambda: cached(f"cached-{os.getpid()}")) == []
    assert cached(f"cached-{os.getpid()}") == len(f"cached-{os.getpid()}")
