"""Saved reports: named, ordered lists of report items kept in the store.

Two tables live in the store's catalog database beside the datasets, created
on first use through :func:`ulr.data.catalog.catalog`:

- ``ulr_reports(id, name, created, updated, owner, private)``: one row per report;
- ``ulr_report_items(report_id, item_id, pos, content_hash, item)``: one row
  per item; ``item`` is :meth:`ulr.report.ReportItem.to_dict` as JSON (figure
  spec, table data, settings, caveats, evidence, takeaway), ``content_hash``
  is the dataset's content hash when the item was made.

Every change is one short transaction: a failed operation changes nothing.
Values are always bound; there are no dynamic identifiers.

Ownership. Every function takes the acting identity, keyword-only ``actor``:

- an identity string made by the caller: the dashboard uses ``"oidc:<issuer>|<subject>"``
  for a signed-in user and ``"browser:<hash>"`` for a browser without sign-in;
- :data:`OPERATOR`, the CLI's identity (whoever runs ``python -m ulr`` holds the
  database file itself, so the operator may read and change every report);
- ``None``: nobody in particular (not signed in): may read reports that are not
  private, may change nothing.

A report belongs to the identity that created it (``owner``); only the owner
changes it (rename, delete, private, items). Anyone with an identity may read
it unless it is private; a private report is visible to its owner only (and to
the operator). Reports saved before owners existed have no owner: anyone with an
identity may read and change them (as before), they never count as someone's
"latest", and they cannot be made private (duplicate one to own a copy).
A non-owner gets :class:`NotOwner`; a report one may not read is reported as
missing (:class:`NoSuchReport`), so its existence does not leak.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ulr.data import catalog, files
from ulr.errors import UlrError
from ulr.report.item import MAX_TITLE, ReportItem

_DDL = [
    "CREATE TABLE IF NOT EXISTS ulr_reports (id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL, "
    "created VARCHAR NOT NULL, updated VARCHAR NOT NULL, owner VARCHAR, "
    "private BOOLEAN DEFAULT false)",
    "CREATE TABLE IF NOT EXISTS ulr_report_items (report_id VARCHAR NOT NULL, "
    "item_id VARCHAR NOT NULL, pos INTEGER NOT NULL, content_hash VARCHAR, "
    "item VARCHAR NOT NULL, PRIMARY KEY (report_id, item_id))",
]
# Stores saved before reports had owners get the columns; their reports keep no owner.
_MIGRATE = [
    "ALTER TABLE ulr_reports ADD COLUMN IF NOT EXISTS owner VARCHAR",
    "ALTER TABLE ulr_reports ADD COLUMN IF NOT EXISTS private BOOLEAN DEFAULT false",
]
_migrated: set[str] = set()  # stores this process has migrated (an ALTER costs a commit)
UNTITLED = "Untitled report"
OPERATOR = "operator"  # the CLI's identity: the one who holds the database file


class NotOwner(UlrError):
    """The acting identity may not change this report (it is someone else's)."""


class NoSuchReport(UlrError):
    """No report with that id that the acting identity may read."""


@dataclass(frozen=True)
class ReportInfo:
    """One saved report as listed: id, name, item count, dates, owner, private."""

    id: str
    name: str
    items: int
    created: str
    updated: str
    owner: str | None = None
    private: bool = False


def _now() -> str:
    return _dt.datetime.now().isoformat(timespec="microseconds")


def _ensure(con) -> None:
    for ddl in _DDL:
        con.execute(ddl)


def _migrate(db) -> str:
    """The store's path, after this process's first block on it has created and migrated
    the report tables (in a transaction of its own, so a failed operation cannot roll the
    migration back)."""
    key = str(Path(db or files.default_db_path()).resolve())
    if key not in _migrated:
        with catalog.catalog(db, write=True) as con:
            _ensure(con)
            for ddl in _MIGRATE:
                con.execute(ddl)
        _migrated.add(key)
    return key


@contextlib.contextmanager
def _catalog(db):
    """One write block on the store's catalog with the report tables there."""
    _migrate(db)
    with catalog.catalog(db, write=True) as con:
        _ensure(con)
        yield con


def _read(db, key: str, read):
    """``read(con)`` on the report tables, kept while the catalog is unchanged.

    A page view reads the reports several times; a write block each time opened the
    database under the store's exclusive lock (tens of ms, serialized across every
    session). :func:`ulr.data.catalog.catalog_read` keeps the value with the files' stamp, so
    any change by any process reads afresh. ``read`` returns tuples only.
    """
    path = _migrate(db)
    try:
        return catalog.catalog_read(path, "reports:" + key, read)
    except duckdb.CatalogException:  # the store was replaced since this process migrated it
        _migrated.discard(path)
        return catalog.catalog_read(_migrate(db), "reports:" + key, read)


def _check_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise UlrError("a report needs a non-empty name.")
    name = " ".join(name.split())
    if len(name) > MAX_TITLE:
        raise UlrError(f"a report name may have at most {MAX_TITLE} characters.")
    return name


def _row_info(row) -> ReportInfo:
    return ReportInfo(id=row[0], name=row[1], items=int(row[2]), created=row[3],
                      updated=row[4], owner=row[5], private=bool(row[6]))


_LIST_SQL = ("SELECT r.id, r.name, count(i.item_id), r.created, r.updated, r.owner, "
             "coalesce(r.private, false) FROM ulr_reports r "
             "LEFT JOIN ulr_report_items i ON i.report_id = r.id ")


def can_read(info: ReportInfo | None, *, actor: str | None) -> bool:
    """Whether ``actor`` may read the report: its owner and the operator always; anyone
    else unless it is private."""
    if info is None:
        return False
    return actor == OPERATOR or (actor is not None and info.owner == actor) or not info.private


def can_edit(info: ReportInfo | None, *, actor: str | None) -> bool:
    """Whether ``actor`` may change the report: its owner and the operator; anyone with an
    identity for a report saved before owners existed (no owner)."""
    if info is None or actor is None:
        return False
    return actor == OPERATOR or info.owner == actor or info.owner is None


def _check_actor(actor) -> None:
    if actor is not None and (not isinstance(actor, str) or not actor.strip()):
        raise UlrError("the acting identity must be a non-empty string (or None).")


def list_reports(*, actor: str | None = None, editable: bool = False,
                 db=None) -> list[ReportInfo]:
    """The reports ``actor`` may read (``editable``: may change), most recently changed
    first."""
    _check_actor(actor)
    rows = _read(db, "list", lambda con: tuple(con.execute(
        _LIST_SQL + "GROUP BY ALL ORDER BY r.updated DESC, r.id").fetchall()))
    infos = [_row_info(r) for r in rows]
    keep = can_edit if editable else can_read
    return [r for r in infos if keep(r, actor=actor)]


def _info_row(con, report_id: str):
    return con.execute(_LIST_SQL + "WHERE r.id = ? GROUP BY ALL", [report_id]).fetchone()


def _info(con, report_id: str) -> ReportInfo | None:
    row = _info_row(con, report_id)
    return None if row is None else _row_info(row)


def get_info(report_id: str, *, actor: str | None = None, db=None) -> ReportInfo | None:
    """The report, or None when there is none that ``actor`` may read."""
    _check_actor(actor)
    report_id = str(report_id)
    row = _read(db, "info:" + report_id, lambda con: _info_row(con, report_id))
    info = None if row is None else _row_info(row)
    return info if can_read(info, actor=actor) else None


def find(ref: str, *, actor: str | None = None, db=None) -> ReportInfo:
    """The report whose id or (unique) name is ``ref`` among those ``actor`` may read;
    UlrError otherwise."""
    reps = list_reports(actor=actor, db=db)
    by_id = [r for r in reps if r.id == ref]
    if by_id:
        return by_id[0]
    by_name = [r for r in reps if r.name == ref]
    if len(by_name) == 1:
        return by_name[0]
    if len(by_name) > 1:
        raise UlrError(f"{len(by_name)} reports are named {ref!r}; name one by its id "
                       f"({', '.join(r.id for r in by_name)}).")
    raise NoSuchReport(f"there is no report {ref!r}; saved reports: "
                       f"{', '.join(repr(r.name) for r in reps) or 'none'}.")


def _need_identity(actor) -> None:
    _check_actor(actor)
    if actor is None:
        raise NotOwner("sign in to make or change reports.")


def _insert(con, rid: str, name: str, now: str, owner: str) -> None:
    con.execute("INSERT INTO ulr_reports (id, name, created, updated, owner, private) "
                "VALUES (?, ?, ?, ?, ?, false)", [rid, name, now, now, owner])


def create(name: str = UNTITLED, *, actor: str, db=None) -> ReportInfo:
    """A new, empty report owned by ``actor``."""
    _need_identity(actor)
    name = _check_name(name)
    rid, now = uuid.uuid4().hex[:12], _now()
    with _catalog(db) as con:
        _insert(con, rid, name, now, actor)
    return ReportInfo(rid, name, 0, now, now, actor, False)


def _missing(report_id: str) -> NoSuchReport:
    return NoSuchReport(f"there is no report with id {report_id!r} (it may have been deleted).")


def _require(con, report_id: str, actor: str | None = None, *, edit: bool = False
             ) -> ReportInfo:
    """The report, when ``actor`` may read it (``edit``: change it); else a typed error."""
    return _allowed(_info(con, report_id), report_id, actor, edit=edit)


def _allowed(info: ReportInfo | None, report_id: str, actor: str | None, *,
             edit: bool = False) -> ReportInfo:
    if not can_read(info, actor=actor):
        raise _missing(report_id)
    if edit and not can_edit(info, actor=actor):
        if actor is None:
            raise NotOwner("sign in to change reports.")
        raise NotOwner(f"the report “{info.name}” belongs to someone else: only its owner can "
                       "change it (duplicate it to work on your own copy).")
    return info


def _touch(con, report_id: str) -> None:
    con.execute("UPDATE ulr_reports SET updated = ? WHERE id = ?", [_now(), report_id])


def rename(report_id: str, name: str, *, actor: str | None, db=None) -> None:
    _check_actor(actor)
    name = _check_name(name)
    with _catalog(db) as con:
        _require(con, report_id, actor, edit=True)
        con.execute("UPDATE ulr_reports SET name = ?, updated = ? WHERE id = ?",
                    [name, _now(), report_id])


def set_private(report_id: str, private: bool, *, actor: str | None, db=None) -> None:
    """Make the report visible to its owner only (``private``), or to anyone with the link."""
    _check_actor(actor)
    with _catalog(db) as con:
        info = _require(con, report_id, actor, edit=True)
        if info.owner is None and private:
            raise NotOwner("a report saved before reports had owners cannot be made private; "
                           "duplicate it and make your copy private.")
        con.execute("UPDATE ulr_reports SET private = ?, updated = ? WHERE id = ?",
                    [bool(private), _now(), report_id])


def delete(report_id: str, *, actor: str | None, db=None) -> None:
    _check_actor(actor)
    with _catalog(db) as con:
        _require(con, report_id, actor, edit=True)
        con.execute("DELETE FROM ulr_report_items WHERE report_id = ?", [report_id])
        con.execute("DELETE FROM ulr_reports WHERE id = ?", [report_id])


def duplicate(report_id: str, name: str | None = None, *, actor: str,
              db=None) -> ReportInfo:
    """A copy of a report ``actor`` may read and all its items (new ids), owned by
    ``actor`` and not private, named ``name`` or "Copy of ..."."""
    _need_identity(actor)
    new_id, now = uuid.uuid4().hex[:12], _now()
    with _catalog(db) as con:
        old = _require(con, report_id, actor)
        new_name = _check_name(name if name is not None else f"Copy of {old.name}"[:MAX_TITLE])
        _insert(con, new_id, new_name, now, actor)
        rows = con.execute("SELECT pos, content_hash, item FROM ulr_report_items WHERE "
                           "report_id = ? ORDER BY pos", [report_id]).fetchall()
        for pos, h, item in rows:
            d = json.loads(item)
            d["id"] = uuid.uuid4().hex[:12]
            con.execute("INSERT INTO ulr_report_items VALUES (?, ?, ?, ?, ?)",
                        [new_id, d["id"], pos, h, json.dumps(d)])
        return _info(con, new_id)


def items(report_id: str, *, actor: str | None = None, db=None) -> list[ReportItem]:
    """The report's items in order (when ``actor`` may read it)."""
    _check_actor(actor)

    def read(con):
        return _info_row(con, report_id), tuple(con.execute(
            "SELECT item FROM ulr_report_items WHERE report_id = ? ORDER BY pos, item_id",
            [report_id]).fetchall())
    info, rows = _read(db, "items:" + str(report_id), read)
    _allowed(None if info is None else _row_info(info), report_id, actor)
    return [ReportItem.from_dict(json.loads(r[0])) for r in rows]


def add_item(report_id: str, item: ReportItem | dict, *, actor: str | None,
             db=None) -> ReportItem:
    """Append ``item`` to the report (validated first; nothing is written if it is broken)."""
    _check_actor(actor)
    try:
        item = ReportItem.from_dict(item)
    except ValueError as exc:
        raise UlrError(f"the report item is broken: {exc}") from None
    payload = json.dumps(item.to_dict())
    with _catalog(db) as con:
        _require(con, report_id, actor, edit=True)
        pos = con.execute("SELECT coalesce(max(pos), -1) + 1 FROM ulr_report_items "
                          "WHERE report_id = ?", [report_id]).fetchone()[0]
        con.execute("INSERT INTO ulr_report_items VALUES (?, ?, ?, ?, ?)",
                    [report_id, item.id, int(pos), item.content_hash or None, payload])
        _touch(con, report_id)
    _draw_ahead(report_id, db)
    return item


def _draw_ahead(report_id: str, db) -> None:
    """The report's charts drawn in the background after the save (:mod:`ulr.report.ahead`:
    the save does not wait; a drawing lost to a kill is drawn by the export)."""
    from ulr.report import ahead
    try:
        ahead.schedule(report_id, db=db,
                       items=lambda: items(report_id, actor=OPERATOR, db=db))
    except Exception:  # noqa: BLE001 - the item is saved; the export draws what it needs
        pass


_EDITABLE = ("title", "note", "takeaway")


def update_item(report_id: str, item_id: str, *, actor: str | None, db=None,
                **fields) -> ReportItem:
    """Change an item's title, note or takeaway (validated; nothing changes on error)."""
    _check_actor(actor)
    bad = [k for k in fields if k not in _EDITABLE]
    if bad:
        raise UlrError(f"a report item's {bad[0]!r} cannot be edited; only "
                       f"{', '.join(_EDITABLE)}.")
    with _catalog(db) as con:
        _require(con, report_id, actor, edit=True)
        row = con.execute("SELECT item FROM ulr_report_items WHERE report_id = ? AND "
                          "item_id = ?", [report_id, item_id]).fetchone()
        if row is None:
            raise UlrError("that report item no longer exists.")
        d = json.loads(row[0])
        d.update(fields)
        try:
            item = ReportItem.from_dict(d)
        except ValueError as exc:
            raise UlrError(str(exc)) from None
        con.execute("UPDATE ulr_report_items SET item = ? WHERE report_id = ? AND item_id = ?",
                    [json.dumps(item.to_dict()), report_id, item_id])
        _touch(con, report_id)
    _draw_ahead(report_id, db)  # a new title or takeaway may resize the slide's chart
    return item


def remove_item(report_id: str, item_id: str, *, actor: str | None, db=None) -> None:
    _check_actor(actor)
    with _catalog(db) as con:
        _require(con, report_id, actor, edit=True)
        con.execute("DELETE FROM ulr_report_items WHERE report_id = ? AND item_id = ?",
                    [report_id, item_id])
        _touch(con, report_id)


def move_item(report_id: str, item_id: str, step: int, *, actor: str | None,
              db=None) -> None:
    """Move an item ``step`` places (-1 up, +1 down); positions are renumbered 0..n-1."""
    _check_actor(actor)
    with _catalog(db) as con:
        _require(con, report_id, actor, edit=True)
        ids = [r[0] for r in con.execute(
            "SELECT item_id FROM ulr_report_items WHERE report_id = ? ORDER BY pos, item_id",
            [report_id]).fetchall()]
        if item_id not in ids:
            raise UlrError("that report item no longer exists.")
        i = ids.index(item_id)
        j = min(max(i + int(step), 0), len(ids) - 1)
        ids.insert(j, ids.pop(i))
        for pos, iid in enumerate(ids):
            con.execute("UPDATE ulr_report_items SET pos = ? WHERE report_id = ? AND "
                        "item_id = ?", [pos, report_id, iid])
        _touch(con, report_id)


def latest(*, actor: str | None, db=None) -> ReportInfo | None:
    """The report ``actor`` owns and changed last, or None (reports without an owner and
    other identities' reports never count)."""
    _check_actor(actor)
    if actor is None:
        return None
    row = _read(db, "latest:" + actor, lambda con: con.execute(
        _LIST_SQL + "WHERE r.owner = ? GROUP BY ALL ORDER BY r.updated DESC, r.id LIMIT 1",
        [actor]).fetchone())
    return None if row is None else _row_info(row)


def latest_or_new(*, actor: str, db=None) -> ReportInfo:
    """The report ``actor`` changed last, or a new untitled one of theirs when there is none."""
    _need_identity(actor)
    return latest(actor=actor, db=db) or create(actor=actor, db=db)


def dataset_status(item: ReportItem, *, cur=None) -> str | None:
    """Why the item's data may be out of date (one sentence), or None when it is current.

    Compares the dataset's content hash recorded with the item with the stored
    dataset's hash now: a deleted or reloaded dataset is named. A simulated result has
    no dataset and is never out of date.
    """
    if item.provenance == "simulated" or not item.dataset or not item.content_hash:
        return None
    cur = cur if cur is not None else catalog.cursor()
    try:
        now = catalog.get_dataset(cur, item.dataset).content_hash
    except UlrError:
        return (f"The dataset “{item.dataset}” this result came from has been deleted; "
                "the item shows the result as it was saved.")
    if now != item.content_hash:
        return (f"The dataset “{item.dataset}” has changed since this result was made; "
                "rerun the page to refresh it.")
    return None


def stale_status(items, *, cur=None) -> dict[str, str]:
    """``{item id: sentence}`` for the items whose dataset changed or was deleted
    (:func:`dataset_status`): the ``status`` every export takes."""
    cur = cur if cur is not None else catalog.cursor()
    return {it.id: s for it in items if (s := dataset_status(it, cur=cur))}
