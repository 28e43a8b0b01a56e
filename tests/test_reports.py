"""Saved reports (ulr.reports): persistence, concurrency, restart, atomic failures."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

from ulr import report, reports, store
from ulr.errors import UlrError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "reports.duckdb")


def item(title="CTR by position", **kw):
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[0.004, 0.002, 0.001]))
    table = pd.DataFrame({"position": [1, 2, 3], "ctr": [0.004, 0.002, 0.001]})
    kw.setdefault("caveats", ["Only 38 clicks: the interval is wide."])
    kw.setdefault("evidence", {"rows": 9000, "clicks": 38, "queries": 120})
    kw.setdefault("settings", {"method": "em", "seed": 3})
    return report.ReportItem.from_result(title, fig=fig, table=table, dataset="sample", **kw)


def test_create_add_list_and_read_back_everything(db):
    r = reports.create("Quarterly review", db=db)
    a = reports.add_item(r.id, item(content_hash="abc"), db=db)
    b = reports.add_item(r.id, item("Second", takeaway="IPW wins."), db=db)
    got = reports.items(r.id, db=db)
    assert [g.id for g in got] == [a.id, b.id]
    assert got[0] == a  # figure spec, table, settings, caveats, evidence, hash all kept
    assert got[0].content_hash == "abc" and got[0].caveats == a.caveats
    assert got[0].fig().data[0].y[0] == pytest.approx(0.004)
    assert got[1].takeaway == "IPW wins."
    assert got[0].takeaway  # pre-filled in plain words
    [info] = reports.list_reports(db=db)
    assert (info.name, info.items) == ("Quarterly review", 2)
    assert reports.find("Quarterly review", db=db).id == r.id
    assert reports.find(r.id, db=db).name == "Quarterly review"


def test_rename_duplicate_delete_move_edit(db):
    r = reports.create(db=db)
    ids = [reports.add_item(r.id, item(f"item {i}"), db=db).id for i in range(3)]
    reports.rename(r.id, "  Weekly   bias  ", db=db)
    assert reports.get_info(r.id, db=db).name == "Weekly bias"
    reports.move_item(r.id, ids[2], -1, db=db)
    assert [i.title for i in reports.items(r.id, db=db)] == ["item 0", "item 2", "item 1"]
    reports.update_item(r.id, ids[0], takeaway="Clicks halve by position 3.", db=db)
    copy = reports.duplicate(r.id, db=db)
    assert copy.name == "Copy of Weekly bias" and copy.items == 3
    citems = reports.items(copy.id, db=db)
    assert [i.title for i in citems] == ["item 0", "item 2", "item 1"]
    assert citems[0].takeaway == "Clicks halve by position 3."
    assert not set(i.id for i in citems) & set(ids)  # new ids: editing one leaves the other
    reports.remove_item(copy.id, citems[0].id, db=db)
    assert len(reports.items(r.id, db=db)) == 3
    reports.delete(r.id, db=db)
    assert [x.id for x in reports.list_reports(db=db)] == [copy.id]
    with pytest.raises(UlrError, match="no report"):
        reports.items(r.id, db=db)


def test_failed_operations_change_nothing(db, monkeypatch):
    r = reports.create("Keep me", db=db)
    a = reports.add_item(r.id, item(), db=db)
    before = (reports.list_reports(db=db), reports.items(r.id, db=db))
    with pytest.raises(UlrError):
        reports.rename(r.id, "   ", db=db)
    with pytest.raises(UlrError):
        reports.add_item(r.id, {"title": "", "figure": "not json"}, db=db)
    with pytest.raises(UlrError):
        reports.update_item(r.id, a.id, title="", db=db)
    with pytest.raises(UlrError):
        reports.update_item(r.id, a.id, figure="{}", db=db)
    with pytest.raises(UlrError):
        reports.add_item("nope", item(), db=db)
    with pytest.raises(UlrError):
        reports.delete("nope", db=db)
    # A failure half-way through a duplicate (after the report row and one item were
    # written) rolls everything back.
    reports.add_item(r.id, item("two"), db=db)
    before = (reports.list_reports(db=db), reports.items(r.id, db=db))
    real, calls = json.dumps, []

    def flaky(obj, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(obj, *a, **k)

    monkeypatch.setattr(reports.json, "dumps", flaky)
    with pytest.raises(OSError):
        reports.duplicate(r.id, db=db)
    monkeypatch.undo()
    assert (reports.list_reports(db=db), reports.items(r.id, db=db)) == before


def test_concurrent_sessions_lose_no_item(db):
    r1, r2 = reports.create("one", db=db), reports.create("two", db=db)
    errors = []

    def session(rid, n, tag):
        try:
            for i in range(n):
                reports.add_item(rid, item(f"{tag} {i}"), db=db)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=session, args=(rid, 6, f"s{k}"))
               for k, rid in enumerate([r1.id, r1.id, r1.id, r2.id])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    one = reports.items(r1.id, db=db)
    assert len(one) == 18 and len({i.id for i in one}) == 18
    for k in range(3):  # each session's items keep their own order
        mine = [i.title for i in one if i.title.startswith(f"s{k} ")]
        assert mine == [f"s{k} {i}" for i in range(6)]
    assert len(reports.items(r2.id, db=db)) == 6


def test_reports_survive_a_restart_in_a_new_process(db):
    code = ("import sys; from ulr import reports, report; import plotly.graph_objects as go;"
            "r = reports.create('Restart me', db=sys.argv[1]);"
            "reports.add_item(r.id, report.ReportItem.from_result('Chart', "
            "fig=go.Figure(go.Bar(y=[1])), caveats=['wide interval']), db=sys.argv[1]);"
            "print(r.id)")
    out = subprocess.run([sys.executable, "-c", code, db], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rid = out.stdout.strip()
    read = subprocess.run([sys.executable, "-c", "import sys; from ulr import reports; "
                           "print([(i.title, i.caveats) for i in reports.items(sys.argv[2], "
                           "db=sys.argv[1])])", db, rid], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip() == "[('Chart', ['wide interval'])]"


def test_changed_or_deleted_dataset_is_flagged(tmp_path):
    cur = store.cursor()
    store.ensure_sample(cur=cur)
    h = store.get_dataset(cur, store.SAMPLE_NAME).content_hash
    ok = item(content_hash=h)
    assert reports.dataset_status(ok, cur=cur) is None
    changed = item(content_hash="0" * 64)
    assert "has changed" in reports.dataset_status(changed, cur=cur)
    gone = report.ReportItem.from_result("x", dataset="deleted-one", content_hash=h)
    assert "deleted" in reports.dataset_status(gone, cur=cur)
    assert reports.dataset_status(report.ReportItem(title="no hash"), cur=cur) is None
