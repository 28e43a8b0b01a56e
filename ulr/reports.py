"""Saved reports: named, ordered lists of report items kept in the store.

Two tables live in the store's catalog database beside the datasets, created
on first use through :func:`ulr.store.catalog`:

- ``ulr_reports(id, name, created, updated)``: one row per report;
- ``ulr_report_items(report_id, item_id, pos, content_hash, item)``: one row
  per item; ``item`` is :meth:`ulr.report.ReportItem.to_dict` as JSON (figure
  spec, table data, settings, caveats, evidence, takeaway), ``content_hash``
  is the dataset's content hash when the item was made.

Every change is one short transaction: a failed operation changes nothing.
Values are always bound; there are no dynamic identifiers.
"""

from __future__ import annotations

import datetime as _dt
import json
import uuid
from dataclasses import dataclass

from ulr import store
from ulr.errors import UlrError
from ulr.report import MAX_TITLE, ReportItem

_DDL = [
    "CREATE TABLE IF NOT EXISTS ulr_reports (id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL, "
    "created VARCHAR NOT NULL, updated VARCHAR NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ulr_report_items (report_id VARCHAR NOT NULL, "
    "item_id VARCHAR NOT NULL, pos INTEGER NOT NULL, content_hash VARCHAR, "
    "item VARCHAR NOT NULL, PRIMARY KEY (report_id, item_id))",
]
UNTITLED = "Untitled report"


@dataclass(frozen=True)
class ReportInfo:
    """One saved report as listed: id, name, item count, dates."""

    id: str
    name: str
    items: int
    created: str
    updated: str


def _now() -> str:
    return _dt.datetime.now().isoformat(timespec="microseconds")


def _ensure(con) -> None:
    for ddl in _DDL:
        con.execute(ddl)


def _check_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise UlrError("a report needs a non-empty name.")
    name = " ".join(name.split())
    if len(name) > MAX_TITLE:
        raise UlrError(f"a report name may have at most {MAX_TITLE} characters.")
    return name


def _row_info(row) -> ReportInfo:
    return ReportInfo(id=row[0], name=row[1], items=int(row[2]), created=row[3],
                      updated=row[4])


_LIST_SQL = ("SELECT r.id, r.name, count(i.item_id), r.created, r.updated FROM ulr_reports r "
             "LEFT JOIN ulr_report_items i ON i.report_id = r.id ")


def list_reports(*, db=None) -> list[ReportInfo]:
    """Every saved report, most recently changed first."""
    with store.catalog(db, write=True) as con:
        _ensure(con)
        rows = con.execute(_LIST_SQL + "GROUP BY ALL ORDER BY r.updated DESC, r.id").fetchall()
    return [_row_info(r) for r in rows]


def _info(con, report_id: str) -> ReportInfo | None:
    row = con.execute(_LIST_SQL + "WHERE r.id = ? GROUP BY ALL", [report_id]).fetchone()
    return None if row is None else _row_info(row)


def get_info(report_id: str, *, db=None) -> ReportInfo | None:
    with store.catalog(db, write=True) as con:
        _ensure(con)
        return _info(con, str(report_id))


def find(ref: str, *, db=None) -> ReportInfo:
    """The report whose id or (unique) name is ``ref``; UlrError otherwise."""
    reps = list_reports(db=db)
    by_id = [r for r in reps if r.id == ref]
    if by_id:
        return by_id[0]
    by_name = [r for r in reps if r.name == ref]
    if len(by_name) == 1:
        return by_name[0]
    if len(by_name) > 1:
        raise UlrError(f"{len(by_name)} reports are named {ref!r}; name one by its id "
                       f"({', '.join(r.id for r in by_name)}).")
    raise UlrError(f"there is no report {ref!r}; saved reports: "
                   f"{', '.join(repr(r.name) for r in reps) or 'none'}.")


def create(name: str = UNTITLED, *, db=None) -> ReportInfo:
    """A new, empty report."""
    name = _check_name(name)
    rid, now = uuid.uuid4().hex[:12], _now()
    with store.catalog(db, write=True) as con:
        _ensure(con)
        con.execute("INSERT INTO ulr_reports VALUES (?, ?, ?, ?)", [rid, name, now, now])
    return ReportInfo(rid, name, 0, now, now)


def _require(con, report_id: str) -> None:
    if con.execute("SELECT 1 FROM ulr_reports WHERE id = ?", [report_id]).fetchone() is None:
        raise UlrError(f"there is no report with id {report_id!r} (it may have been deleted).")


def _touch(con, report_id: str) -> None:
    con.execute("UPDATE ulr_reports SET updated = ? WHERE id = ?", [_now(), report_id])


def rename(report_id: str, name: str, *, db=None) -> None:
    name = _check_name(name)
    with store.catalog(db, write=True) as con:
        _ensure(con)
        _require(con, report_id)
        con.execute("UPDATE ulr_reports SET name = ?, updated = ? WHERE id = ?",
                    [name, _now(), report_id])


def delete(report_id: str, *, db=None) -> None:
    with store.catalog(db, write=True) as con:
        _ensure(con)
        _require(con, report_id)
        con.execute("DELETE FROM ulr_report_items WHERE report_id = ?", [report_id])
        con.execute("DELETE FROM ulr_reports WHERE id = ?", [report_id])


def duplicate(report_id: str, name: str | None = None, *, db=None) -> ReportInfo:
    """A copy of a report and all its items (new ids), named ``name`` or "copy of ..."."""
    new_id, now = uuid.uuid4().hex[:12], _now()
    with store.catalog(db, write=True) as con:
        _ensure(con)
        _require(con, report_id)
        old = con.execute("SELECT name FROM ulr_reports WHERE id = ?", [report_id]).fetchone()
        new_name = _check_name(name if name is not None else f"Copy of {old[0]}"[:MAX_TITLE])
        con.execute("INSERT INTO ulr_reports VALUES (?, ?, ?, ?)", [new_id, new_name, now, now])
        rows = con.execute("SELECT pos, content_hash, item FROM ulr_report_items WHERE "
                           "report_id = ? ORDER BY pos", [report_id]).fetchall()
        for pos, h, item in rows:
            d = json.loads(item)
            d["id"] = uuid.uuid4().hex[:12]
            con.execute("INSERT INTO ulr_report_items VALUES (?, ?, ?, ?, ?)",
                        [new_id, d["id"], pos, h, json.dumps(d)])
        return _info(con, new_id)


def items(report_id: str, *, db=None) -> list[ReportItem]:
    """The report's items in order."""
    with store.catalog(db, write=True) as con:
        _ensure(con)
        _require(con, report_id)
        rows = con.execute("SELECT item FROM ulr_report_items WHERE report_id = ? "
                           "ORDER BY pos, item_id", [report_id]).fetchall()
    return [ReportItem.from_dict(json.loads(r[0])) for r in rows]


def add_item(report_id: str, item: ReportItem | dict, *, db=None) -> ReportItem:
    """Append ``item`` to the report (validated first; nothing is written if it is broken)."""
    try:
        item = ReportItem.from_dict(item)
    except ValueError as exc:
        raise UlrError(f"the report item is broken: {exc}") from None
    payload = json.dumps(item.to_dict())
    with store.catalog(db, write=True) as con:
        _ensure(con)
        _require(con, report_id)
        pos = con.execute("SELECT coalesce(max(pos), -1) + 1 FROM ulr_report_items "
                          "WHERE report_id = ?", [report_id]).fetchone()[0]
        con.execute("INSERT INTO ulr_report_items VALUES (?, ?, ?, ?, ?)",
                    [report_id, item.id, int(pos), item.content_hash or None, payload])
        _touch(con, report_id)
    return item


_EDITABLE = ("title", "note", "takeaway")


def update_item(report_id: str, item_id: str, **fields) -> ReportItem:
    """Change an item's title, note or takeaway (validated; nothing changes on error)."""
    db = fields.pop("db", None)
    bad = [k for k in fields if k not in _EDITABLE]
    if bad:
        raise UlrError(f"a report item's {bad[0]!r} cannot be edited; only "
                       f"{', '.join(_EDITABLE)}.")
    with store.catalog(db, write=True) as con:
        _ensure(con)
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
    return item


def remove_item(report_id: str, item_id: str, *, db=None) -> None:
    with store.catalog(db, write=True) as con:
        _ensure(con)
        con.execute("DELETE FROM ulr_report_items WHERE report_id = ? AND item_id = ?",
                    [report_id, item_id])
        _touch(con, report_id)


def move_item(report_id: str, item_id: str, step: int, *, db=None) -> None:
    """Move an item ``step`` places (-1 up, +1 down); positions are renumbered 0..n-1."""
    with store.catalog(db, write=True) as con:
        _ensure(con)
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


def latest_or_new(*, db=None) -> ReportInfo:
    """The most recently changed report, or a new untitled one when there is none."""
    reps = list_reports(db=db)
    return reps[0] if reps else create(db=db)


def dataset_status(item: ReportItem, *, cur=None) -> str | None:
    """Why the item's data may be out of date (one sentence), or None when it is current.

    Compares the dataset's content hash recorded with the item with the stored
    dataset's hash now: a deleted or reloaded dataset is named.
    """
    if not item.dataset or not item.content_hash:
        return None
    cur = cur if cur is not None else store.cursor()
    try:
        now = store.get_dataset(cur, item.dataset).content_hash
    except UlrError:
        return (f"The dataset “{item.dataset}” this result came from has been deleted; "
                "the item shows the result as it was saved.")
    if now != item.content_hash:
        return (f"The dataset “{item.dataset}” has changed since this result was made; "
                "rerun the page to refresh it.")
    return None
