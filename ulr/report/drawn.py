"""Figures drawn once per item version, and kept (issue 54: the report renders once).

Drawing a stored chart for a surface is the slow part of every view and export of a
report: the ulr look and the slide version (:mod:`ulr.report.figures`, plotly's
``update_layout`` walks: ~0.1 s a chart), its HTML (:func:`ulr.report.parts.figure_html`)
and, for PowerPoint and single-chart downloads, a picture rendered by Chromium
(:func:`ulr.report.render.to_images`: seconds). Each is drawn once for what it is drawn
from and then reused:

- in this process (:func:`memo`): the Report page, Present, the HTML report and the
  deck draw each chart once per item version;
- with the saved reports (:func:`kept`): the pictures Chromium renders (the slide PNGs,
  and the SVGs the PDF prints instead of live charts), the charts' HTML of the deck and
  the long report (:func:`ulr.report.parts.draw_figures`) and the PDF of a deck are kept in the store beside the reports (table ``ulr_report_drawn``), so a
  second export, in any process, renders nothing;
- after a save (:mod:`ulr.report.ahead`): saving an item draws the report's slide
  pictures and deck charts in a background thread, so the first export finds them kept.
  An export needing a drawing another thread is making waits for it (:func:`kept`).

A drawing is keyed by the digest (:func:`digest`) of everything it is drawn from: the
item's chart JSON (its version: an item whose chart changes has a new key, so a stale
drawing is never served), the options (size, scale, slide or not), and the versions
of ulr, plotly and kaleido plus the source of the drawing code (``_CODE``), so a
change of the look draws afresh. The outputs are the same bytes as drawing without
the cache (tests/report/test_drawn.py).
"""

from __future__ import annotations

import collections
import hashlib
import logging
import threading

_log = logging.getLogger(__name__)

#: drawings kept in this process (the least recently used are dropped first)
MEMO_ENTRIES = 512
#: drawings kept in the store (the oldest are dropped first)
KEPT_ENTRIES = 400

#: seconds an export waits for a drawing another thread is making before drawing it itself
WAIT_S = 120.0

_memo: collections.OrderedDict = collections.OrderedDict()
_inflight: dict = {}  # (kind, key) -> threading.Event set when that thread is done
_memo_lock = threading.Lock()
_off = threading.local()  # ``_off.on = False``: draw everything afresh (tests, benches)


def digest(*parts) -> str:
    """SHA-256 of ``parts`` (text or bytes), each length-prefixed (no two splits collide)."""
    h = hashlib.sha256()
    for p in parts:
        b = p if isinstance(p, bytes) else str(p).encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _code() -> str:
    """What the drawings depend on besides their input: versions and the drawing code."""
    import importlib.metadata as md
    from pathlib import Path

    from ulr import __version__
    versions = []
    for pkg in ("plotly", "kaleido"):
        try:
            versions.append(f"{pkg} {md.version(pkg)}")
        except md.PackageNotFoundError:
            versions.append(f"{pkg} none")
    # the drawing code's source, read as files (importing those modules here would make
    # an import cycle: they import this one)
    here = Path(__file__).resolve().parent
    try:
        sources = [f.read_text() for f in (here.parent / "theme.py", here / "figures.py",
                                           here / "parts.py", here / "render.py",
                                           here / "deck.py")]
    except OSError:  # no source files (a frozen install): the versions only
        sources = []
    return digest(__version__, *versions, *sources)


_CODE: list = []


def code() -> str:
    """:func:`_code`, once per process."""
    if not _CODE:
        _CODE.append(_code())
    return _CODE[0]


class enabled:
    """``with drawn.enabled(False):`` draws everything afresh and keeps nothing (the
    benchmark's "without the cache" and the tests' reference), on this thread."""

    def __init__(self, on: bool = True):
        self.on = bool(on)

    def __enter__(self):
        self.prev = getattr(_off, "on", True)
        _off.on = self.on
        return self

    def __exit__(self, *exc):
        _off.on = self.prev
        return False


def active() -> bool:
    return getattr(_off, "on", True)


def memo(kind: str, key: str, draw):
    """``draw()`` once per ``(kind, key)`` in this process; immutable values only (text,
    bytes, tuples): every caller gets the same object."""
    if not active():
        return draw()
    k = (kind, key)
    with _memo_lock:
        if k in _memo:
            _memo.move_to_end(k)
            return _memo[k]
    value = draw()
    with _memo_lock:
        _memo[k] = value
        while len(_memo) > MEMO_ENTRIES:
            _memo.popitem(last=False)
    return value


def put(kind: str, key: str, value) -> None:
    """Keep ``value`` (immutable) as :func:`memo` would have drawn it."""
    if not active():
        return
    with _memo_lock:
        _memo[(kind, key)] = value
        _memo.move_to_end((kind, key))
        while len(_memo) > MEMO_ENTRIES:
            _memo.popitem(last=False)


_DDL = ("CREATE TABLE IF NOT EXISTS ulr_report_drawn (key VARCHAR PRIMARY KEY, "
        "kind VARCHAR NOT NULL, payload BLOB NOT NULL, created VARCHAR NOT NULL)")


def _have_store(db) -> bool:
    """The store exists: drawings are kept in a store the app or a load made, never in one
    made for them (``ulr report --input ... --format pdf`` leaves no store behind)."""
    from pathlib import Path

    from ulr.data import files
    return Path(files.store_path(db)).exists()


def _load(db, keys: list[str]) -> dict:
    from ulr.data import catalog
    if not _have_store(db):
        return {}
    try:
        with catalog.catalog(db) as con:  # a read: the catalog's cached reads stay valid
            if not con.execute("SELECT 1 FROM duckdb_tables() WHERE schema_name = 'main' "
                               "AND table_name = 'ulr_report_drawn'").fetchone():
                return {}
            rows = con.execute("SELECT key, payload FROM ulr_report_drawn WHERE key IN "
                               "(SELECT unnest($keys))", {"keys": keys}).fetchall()
        return {k: bytes(p) for k, p in rows}
    except Exception as exc:  # noqa: BLE001 - the store is a cache here: draw instead
        _log.warning("report drawings: cannot read the store (%s)", exc)
        return {}


def _save(db, kind: str, values: dict) -> None:
    import datetime as dt

    from ulr.data import catalog
    if db is False or not values or not _have_store(db):  # False: not in the store
        return
    try:
        with catalog.catalog(db, write=True) as con:
            con.execute(_DDL)
            now = dt.datetime.now().isoformat(timespec="seconds")  # the order of keeping
            con.executemany("INSERT OR REPLACE INTO ulr_report_drawn VALUES (?, ?, ?, ?)",
                            [[k, kind, v, now] for k, v in values.items()])
            con.execute("DELETE FROM ulr_report_drawn WHERE key IN (SELECT key FROM "
                        "ulr_report_drawn ORDER BY created DESC, key OFFSET $n)",
                        {"n": KEPT_ENTRIES})
    except Exception as exc:  # noqa: BLE001 - a drawing not kept is drawn again next time
        _log.warning("report drawings: cannot keep them in the store (%s)", exc)


def kept(kind: str, keys: list[str], draw, *, db=None, keep: bool = True) -> list[bytes]:
    """The bytes drawn for each of ``keys``, from this process, else the store, else
    ``draw(missing)`` (``missing``: the positions of ``keys`` drawn by neither; one call
    for all of them, e.g. one browser session), which are then kept in both (with
    ``keep=False`` in this process only: a page view writes nothing to the store)."""
    return kept_many([(kind, keys)], lambda missing: draw([j for _, j in missing]), db=db,
                     keep=keep)[0]


def peek(kind: str, keys: list[str], *, db=None) -> list[bytes] | None:
    """The bytes kept for every one of ``keys`` (this process, else the store), or None when
    one is not kept: nothing is drawn and nothing another thread is drawing is waited for
    (the PDF prints live charts then, :func:`ulr.report.render.build_pdf`)."""
    out = peek_each(kind, keys, db=db)
    return None if out is None or any(v is None for v in out) else out


def peek_each(kind: str, keys: list[str], *, db=None) -> list[bytes | None] | None:
    """The bytes kept for each of ``keys`` (this process, else the store; one read for all),
    None where one is not kept, as :func:`peek` without drawing or waiting (the Report
    page shows a kept picture, else the live chart). None when drawings are off."""
    if not active():
        return None
    with _memo_lock:
        out = [_memo.get((kind, k)) for k in keys]
    missing = [i for i, v in enumerate(out) if v is None]
    if missing:
        found = _load(db, sorted({keys[i] for i in missing}))
        for i in missing:
            out[i] = found.get(keys[i])
    with _memo_lock:
        for k, v in zip(keys, out):
            if v is not None:
                _memo[(kind, k)] = v
                _memo.move_to_end((kind, k))
        while len(_memo) > MEMO_ENTRIES:
            _memo.popitem(last=False)
    return out


def kept_many(requests, draw, *, db=None, keep: bool = True) -> list[list[bytes]]:
    """:func:`kept` of several kinds at once: ``requests`` is ``[(kind, keys), ...]`` and
    ``draw(missing)`` draws every missing ``(request position, key position)`` in one
    call (the slide pictures and the PDF's charts in one browser session). Returns the
    bytes of each request's keys, in order."""
    pairs = [(kind, k) for kind, keys in requests for k in keys]
    where = [(g, j) for g, (_, keys) in enumerate(requests) for j in range(len(keys))]
    if not active():
        fresh = list(draw(where)) if where else []
    else:
        fresh: list = [None] * len(pairs)
        with _memo_lock:
            for i, p in enumerate(pairs):
                if p in _memo:
                    fresh[i] = _memo[p]
        missing = [i for i, v in enumerate(fresh) if v is None]
        if missing:
            found = _load(db, sorted({pairs[i][1] for i in missing}))
            for i in missing:
                fresh[i] = found.get(pairs[i][1])
        missing = [i for i, v in enumerate(fresh) if v is None]
        if missing:
            _draw_missing(pairs, fresh, missing,
                          lambda positions: draw([where[i] for i in positions]),
                          db if keep else False)
        with _memo_lock:
            for p, v in zip(pairs, fresh):
                _memo[p] = v
                _memo.move_to_end(p)
            while len(_memo) > MEMO_ENTRIES:
                _memo.popitem(last=False)
    out, i = [], 0
    for _, keys in requests:
        out.append(fresh[i:i + len(keys)])
        i += len(keys)
    return out


def _save_pairs(db, pairs: list, values: dict) -> None:
    """Keep ``{position: bytes}`` of ``pairs`` (``(kind, key)``) in the store, by kind."""
    by_kind: dict = {}
    for i, v in values.items():
        by_kind.setdefault(pairs[i][0], {})[pairs[i][1]] = v
    for kind, vals in by_kind.items():
        _save(db, kind, vals)


def _draw_missing(pairs: list, out: list, missing: list[int], draw, db) -> None:
    """Fill ``out[i]`` for ``missing`` positions of ``pairs`` (``(kind, key)``): those
    another thread of this process is drawing now (the drawing after a save,
    :mod:`ulr.report.ahead`, or another export) are waited for, the rest drawn here,
    once. A drawing the other thread could not make is drawn here after all."""
    mine, theirs, done = [], [], threading.Event()
    with _memo_lock:
        for i in missing:
            k = pairs[i]
            if k in _memo:
                out[i] = _memo[k]
            elif k in _inflight:
                theirs.append((i, _inflight[k]))
            else:
                _inflight[k] = done
                mine.append(i)
    try:
        if mine:
            fresh = list(draw(mine))
            with _memo_lock:
                for i, v in zip(mine, fresh):
                    out[i] = v
                    _memo[pairs[i]] = v
            _save_pairs(db, pairs, {i: out[i] for i in mine})
    finally:
        with _memo_lock:
            for i in mine:
                _inflight.pop(pairs[i], None)
        done.set()
    late = []
    for i, event in theirs:
        event.wait(WAIT_S)
        with _memo_lock:
            out[i] = _memo.get(pairs[i])
        if out[i] is None:
            late.append(i)
    if late:
        fresh = list(draw(late))
        for i, v in zip(late, fresh):
            out[i] = v
        _save_pairs(db, pairs, {i: out[i] for i in late})


def figure_key(item) -> str:
    """The version of an item's chart: the digest of its JSON text (of a plotly figure,
    dict or JSON given instead of an item, the digest of its JSON)."""
    if hasattr(item, "figure_dict") and hasattr(item, "title"):  # a report item
        text = item.figure
        if text is None:
            return ""
        hit = getattr(item, "_drawn_key", None)
        if hit is not None and hit[0] is text:
            return hit[1]
        key = digest(text)
        item._drawn_key = (text, key)
        return key
    import json

    import plotly.utils
    if isinstance(item, str):  # the chart's JSON (as ulr.report.figures.figure_dict reads)
        item = json.loads(item)
    elif hasattr(item, "to_plotly_json"):  # a plotly figure
        item = item.to_plotly_json()
    return digest(json.dumps(item, cls=plotly.utils.PlotlyJSONEncoder, sort_keys=True))


def clear() -> None:
    """Forget this process's drawings (the store keeps its own)."""
    with _memo_lock:
        _memo.clear()
