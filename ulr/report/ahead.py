"""Charts drawn when an item is saved to a report, in the background (issue 54).

Saving an item (:func:`ulr.report.saved.add_item`: the page's "Add to report", the CLI's
``report add`` and ``audit --report``) asks this module to draw the report's charts as its
exports will use them: the slide pictures of the PowerPoint deck and the SVG pictures
of the charts the PDF prints (:func:`ulr.report.powerpoint.draw_pictures`, rendered by
Chromium in one kaleido session: seconds) and the charts of the HTML deck Present shows
(:func:`ulr.report.parts.draw_figures`). They are
kept as every drawing is (:mod:`ulr.report.drawn`: in this process and in the store), so
the first export finds them drawn. Exports are still built on demand.

- The save does not wait: one daemon thread owned by ulr draws, after :data:`DELAY_S`
  (saves in a row, as "Build the report" makes them, are drawn in one browser session).
- Nothing is lost by a kill: the item is saved before it is drawn, and a picture not
  kept is drawn by the export that needs it. An export that needs a picture this thread
  is drawing waits for it instead of drawing it twice (:func:`ulr.report.drawn.kept`).
- At the process's exit the drawing stops, its browser is killed and its folder removed
  (a CLI command does not wait for it).
- ``ULR_DRAW_AHEAD=0`` in the environment turns it off (the benchmark's "first export";
  unset under pytest, it is off too).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time

_log = logging.getLogger(__name__)

#: seconds between a save and its drawing (the saves of one batch share a browser)
DELAY_S = 1.0

_cond = threading.Condition()
_pending: dict = {}  # (store path, report id) -> db as given
_state = {"thread": None, "busy": False, "stop": False}


def on() -> bool:
    """Drawing after a save is on and can draw here: ``ULR_DRAW_AHEAD`` is not ``0`` (unset,
    it is on, except under pytest: tests that save items start no browser unless they
    ask for it with ``ULR_DRAW_AHEAD=1``), and kaleido and Chromium are installed."""
    flag = os.environ.get("ULR_DRAW_AHEAD")
    if flag is None:
        flag = "0" if "PYTEST_CURRENT_TEST" in os.environ else "1"
    if flag.strip().lower() in ("0", "false", "no", "off"):
        return False
    from ulr.report.browser import static_export_problem
    return static_export_problem() is None


def schedule(report_id: str, *, items, db=None) -> bool:
    """Draw ``report_id``'s charts in the background, soon; returns whether it will.
    ``items()`` reads the saved report's items then (:mod:`ulr.report.saved` passes its
    reader, so this module does not import it back)."""
    if _state["stop"] or not on():
        return False
    from ulr.data.files import store_path
    with _cond:
        _pending[(store_path(db), report_id)] = (db, items)
        t = _state["thread"]
        if t is None or not t.is_alive():
            t = threading.Thread(target=_work, name="ulr-report-draw-ahead", daemon=True)
            _state["thread"] = t
            t.start()
        _cond.notify_all()
    return True


def _work() -> None:
    while True:
        time.sleep(DELAY_S)
        with _cond:
            if _state["stop"] or not _pending:
                _state["thread"] = None
                _cond.notify_all()
                return
            batch = dict(_pending)
            _pending.clear()
            _state["busy"] = True
        try:
            for (_, report_id), (db, read) in batch.items():
                if _state["stop"]:
                    break
                try:
                    draw_report(read(), db=db)
                except Exception as exc:  # noqa: BLE001 - the export draws what is missing
                    _log.warning("report %s: charts not drawn ahead (%s)", report_id, exc)
        finally:
            with _cond:
                _state["busy"] = False
                if not _pending:  # done: a later save starts a new thread
                    _state["thread"] = None
                _cond.notify_all()
        with _cond:
            if _state["thread"] is None:
                return


def draw_report(items, *, db=None) -> int:
    """Draw and keep what the exports of a saved report's ``items`` will need (in this
    thread); returns the number of charts. Stale-data notes are not known here: the
    pictures are drawn as for a report whose data has not changed (the usual case right
    after a save)."""
    from ulr.report import parts, powerpoint
    n = powerpoint.draw_pictures(items, db=db)  # and the PDF's pictures
    if not _state["stop"]:  # the deck's live charts (Present, the slides HTML)
        parts.draw_figures(items, slide=True, height="100%", db=db, keep=True)
    return n


def idle(timeout: float = 120.0) -> bool:
    """Wait until nothing is pending or being drawn (tests, benchmarks); False on timeout."""
    end = time.monotonic() + timeout
    with _cond:
        while _pending or _state["busy"] or (_state["thread"] is not None
                                             and _state["thread"].is_alive()):
            left = end - time.monotonic()
            if left <= 0:
                return False
            _cond.wait(min(left, 0.2))
    return True


@atexit.register
def _stop() -> None:
    """At exit: draw nothing more; kill the browser of a drawing under way (this process's
    export folders: the daemon thread is stopped mid-way and cannot clean up)."""
    _state["stop"] = True
    t = _state["thread"]
    if t is None or not t.is_alive():
        return
    import shutil
    import tempfile
    from pathlib import Path

    from ulr.report import browser
    me = f"{os.getpid()} {browser._start_time(os.getpid())}"
    for folder in Path(tempfile.gettempdir()).glob(browser.EXPORT_PREFIX + "*"):
        try:
            if (folder / browser._OWNER).read_text().strip() != me:
                continue
        except OSError:
            continue
        browser._kill_browsers(folder)
        shutil.rmtree(folder, ignore_errors=True)
