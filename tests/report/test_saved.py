"""Saved reports (ulr.report.saved): persistence, restart, atomicity."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

from ulr import report

from ulr.data import catalog, ingest
from ulr.report import saved as reports
from ulr.errors import UlrError

ROOT = Path(__file__).resolve().parents[2]


A, B = "browser:alice", "oidc:https://id.example|bob"  # two identities


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
    r = reports.create("Quarterly review", actor=A, db=db)
    a = reports.add_item(r.id, item(content_hash="abc"), actor=A, db=db)
    b = reports.add_item(r.id, item("Second", takeaway="IPW wins."), actor=A, db=db)
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
    r = reports.create(actor=A, db=db)
    ids = [reports.add_item(r.id, item(f"item {i}"), actor=A, db=db).id for i in range(3)]
    reports.rename(r.id, "  Weekly   bias  ", actor=A, db=db)
    assert reports.get_info(r.id, db=db).name == "Weekly bias"
    reports.move_item(r.id, ids[2], -1, actor=A, db=db)
    assert [i.title for i in reports.items(r.id, db=db)] == ["item 0", "item 2", "item 1"]
    reports.update_item(r.id, ids[0], takeaway="Clicks halve by position 3.", actor=A, db=db)
    copy = reports.duplicate(r.id, actor=A, db=db)
    assert copy.name == "Copy of Weekly bias" and copy.items == 3
    citems = reports.items(copy.id, db=db)
    assert [i.title for i in citems] == ["item 0", "item 2", "item 1"]
    assert citems[0].takeaway == "Clicks halve by position 3."
    assert not set(i.id for i in citems) & set(ids)  # new ids: editing one leaves the other
    reports.remove_item(copy.id, citems[0].id, actor=A, db=db)
    assert len(reports.items(r.id, db=db)) == 3
    reports.delete(r.id, actor=A, db=db)
    assert [x.id for x in reports.list_reports(db=db)] == [copy.id]
    with pytest.raises(UlrError, match="no report"):
        reports.items(r.id, db=db)


def test_failed_operations_change_nothing(db, monkeypatch):
    r = reports.create("Keep me", actor=A, db=db)
    a = reports.add_item(r.id, item(), actor=A, db=db)
    before = (reports.list_reports(db=db), reports.items(r.id, db=db))
    with pytest.raises(UlrError):
        reports.rename(r.id, "   ", actor=A, db=db)
    with pytest.raises(UlrError):
        reports.add_item(r.id, {"title": "", "figure": "not json"}, actor=A, db=db)
    with pytest.raises(UlrError):
        reports.update_item(r.id, a.id, title="", actor=A, db=db)
    with pytest.raises(UlrError):
        reports.update_item(r.id, a.id, figure="{}", actor=A, db=db)
    with pytest.raises(UlrError):
        reports.add_item("nope", item(), actor=A, db=db)
    with pytest.raises(UlrError):
        reports.delete("nope", actor=A, db=db)
    # A failure half-way through a duplicate (after the report row and one item were
    # written) rolls everything back.
    reports.add_item(r.id, item("two"), actor=A, db=db)
    before = (reports.list_reports(db=db), reports.items(r.id, db=db))
    real, calls = json.dumps, []

    def flaky(obj, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(obj, *a, **k)

    monkeypatch.setattr(reports.json, "dumps", flaky)
    with pytest.raises(OSError):
        reports.duplicate(r.id, actor=A, db=db)
    monkeypatch.undo()
    assert (reports.list_reports(db=db), reports.items(r.id, db=db)) == before


def test_concurrent_sessions_lose_no_item(db):
    r1, r2 = reports.create("one", actor=A, db=db), reports.create("two", actor=A, db=db)
    errors = []

    def session(rid, n, tag):
        try:
            for i in range(n):
                reports.add_item(rid, item(f"{tag} {i}"), actor=A, db=db)
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
    code = ("import sys; from ulr import report; from ulr.report import saved as reports; "
            "import plotly.graph_objects as go;"
            "r = reports.create('Restart me', actor='a', db=sys.argv[1]);"
            "reports.add_item(r.id, report.ReportItem.from_result('Chart', "
            "fig=go.Figure(go.Bar(y=[1])), caveats=['wide interval']), actor='a', "
            "db=sys.argv[1]);"
            "print(r.id)")
    out = subprocess.run([sys.executable, "-c", code, db], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rid = out.stdout.strip()
    read = subprocess.run([sys.executable, "-c", "import sys; from ulr.report import saved as reports; "
                           "print([(i.title, i.caveats) for i in reports.items(sys.argv[2], "
                           "db=sys.argv[1])])", db, rid], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip() == "[('Chart', ['wide interval'])]"


def test_changed_or_deleted_dataset_is_flagged(tmp_path):
    cur = catalog.cursor()
    ingest.ensure_sample(cur=cur)
    h = catalog.get_dataset(cur, ingest.SAMPLE_NAME).content_hash
    ok = item(content_hash=h)
    assert reports.dataset_status(ok, cur=cur) is None
    changed = item(content_hash="0" * 64)
    assert "has changed" in reports.dataset_status(changed, cur=cur)
    gone = report.ReportItem.from_result("x", dataset="deleted-one", content_hash=h)
    assert "deleted" in reports.dataset_status(gone, cur=cur)
    assert reports.dataset_status(report.ReportItem(title="no hash"), cur=cur) is None


# ----------------------------------------------------------------------------- ownership


def test_a_report_belongs_to_whoever_made_it(db):
    mine = reports.create("Alice report", actor=A, db=db)
    a = reports.add_item(mine.id, item(), actor=A, db=db)
    assert reports.get_info(mine.id, actor=A, db=db).owner == A
    before = (reports.list_reports(actor=A, db=db), reports.items(mine.id, actor=A, db=db))
    refused = [
        lambda who: reports.rename(mine.id, "Bob was here", actor=who, db=db),
        lambda who: reports.delete(mine.id, actor=who, db=db),
        lambda who: reports.add_item(mine.id, item("B's"), actor=who, db=db),
        lambda who: reports.update_item(mine.id, a.id, title="B's title", actor=who, db=db),
        lambda who: reports.remove_item(mine.id, a.id, actor=who, db=db),
        lambda who: reports.move_item(mine.id, a.id, 1, actor=who, db=db),
        lambda who: reports.set_private(mine.id, True, actor=who, db=db),
    ]
    for op in refused:
        with pytest.raises(reports.NotOwner, match="belongs to someone else"):
            op(B)
        with pytest.raises(reports.NotOwner, match="sign in"):  # nobody (not signed in)
            op(None)
    with pytest.raises(reports.NotOwner, match="sign in"):
        reports.create("x", actor=None, db=db)
    assert (reports.list_reports(actor=A, db=db), reports.items(mine.id, actor=A, db=db)) \
        == before
    # B reads it (the presentation link), and may copy it into a report of B's own
    assert [i.id for i in reports.items(mine.id, actor=B, db=db)] == [a.id]
    assert reports.items(mine.id, actor=None, db=db)[0].id == a.id
    copy = reports.duplicate(mine.id, actor=B, db=db)
    assert copy.owner == B and copy.items == 1
    reports.rename(copy.id, "Bob's copy", actor=B, db=db)
    assert reports.get_info(mine.id, actor=A, db=db).name == "Alice report"
    # the owner and the operator (the CLI) change it
    reports.rename(mine.id, "Alice's", actor=A, db=db)
    reports.rename(mine.id, "Renamed by the operator", actor=reports.OPERATOR, db=db)
    assert reports.get_info(mine.id, db=db).name == "Renamed by the operator"
    assert [r.id for r in reports.list_reports(actor=B, editable=True, db=db)] == [copy.id]


def test_a_private_report_is_its_owners_only(db):
    secret = reports.create("Salaries", actor=A, db=db)
    reports.add_item(secret.id, item(), actor=A, db=db)
    reports.set_private(secret.id, True, actor=A, db=db)
    assert reports.get_info(secret.id, actor=A, db=db).private
    for who in (B, None):
        assert reports.get_info(secret.id, actor=who, db=db) is None
        assert secret.id not in [r.id for r in reports.list_reports(actor=who, db=db)]
        with pytest.raises(reports.NoSuchReport, match="no report"):  # as if it did not exist
            reports.items(secret.id, actor=who, db=db)
        with pytest.raises(UlrError, match="no report"):
            reports.find("Salaries", actor=who, db=db)
    with pytest.raises(reports.NoSuchReport):
        reports.duplicate(secret.id, actor=B, db=db)
    with pytest.raises(reports.NoSuchReport):
        reports.rename(secret.id, "x", actor=B, db=db)
    assert len(reports.items(secret.id, actor=A, db=db)) == 1
    assert reports.find("Salaries", actor=reports.OPERATOR, db=db).id == secret.id
    reports.set_private(secret.id, False, actor=A, db=db)
    assert len(reports.items(secret.id, actor=B, db=db)) == 1


def test_latest_is_per_owner(db):
    a1 = reports.create("Alice report", actor=A, db=db)
    reports.add_item(a1.id, item(), actor=A, db=db)
    b1 = reports.create("Bob's", actor=B, db=db)
    reports.rename(b1.id, "Bob's, renamed later", actor=B, db=db)  # the newest change
    assert reports.latest_or_new(actor=A, db=db).id == a1.id
    assert reports.latest_or_new(actor=B, db=db).id == b1.id
    c = "browser:carol"
    new = reports.latest_or_new(actor=c, db=db)  # nothing of Carol's: a new one of hers
    assert new.id not in (a1.id, b1.id) and new.owner == c and new.name == reports.UNTITLED
    assert reports.latest(actor=None, db=db) is None
    a2 = reports.create("Alice's second", actor=A, db=db)
    assert reports.latest(actor=A, db=db).id == a2.id
    reports.add_item(a1.id, item(), actor=A, db=db)
    assert reports.latest(actor=A, db=db).id == a1.id


def test_an_old_store_is_migrated_and_its_reports_have_no_owner(tmp_path):
    db = str(tmp_path / "old.duckdb")
    with catalog.catalog(db, write=True) as con:  # the layout before owners
        con.execute("CREATE TABLE ulr_reports (id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL,"
                    " created VARCHAR NOT NULL, updated VARCHAR NOT NULL)")
        con.execute("INSERT INTO ulr_reports VALUES ('old1', 'Legacy', '2025', '2025')")
    [old] = reports.list_reports(actor=A, db=db)
    assert (old.id, old.owner, old.private) == ("old1", None, False)
    reports.add_item("old1", item(), actor=A, db=db)  # no owner: anyone with an identity
    reports.rename("old1", "Legacy, renamed", actor=B, db=db)
    with pytest.raises(reports.NotOwner, match="sign in"):
        reports.rename("old1", "x", actor=None, db=db)
    with pytest.raises(reports.NotOwner, match="before reports had owners"):
        reports.set_private("old1", True, actor=A, db=db)
    assert reports.latest(actor=A, db=db) is None  # never someone's "latest"
    mine = reports.create("New", actor=A, db=db)
    assert reports.get_info(mine.id, actor=A, db=db).owner == A


def test_stale_status_is_every_flagged_item_and_never_a_simulated_one(tmp_path):
    cur = catalog.cursor()
    ingest.ensure_sample(cur=cur)
    h = catalog.get_dataset(cur, ingest.SAMPLE_NAME).content_hash
    sim = report.ReportItem.from_result("Severity sweep", provenance="simulated")
    its = [item(content_hash=h), item(content_hash="0" * 64), sim,
           report.ReportItem.from_result("x", dataset="deleted-one", content_hash=h)]
    want = {}
    for it in its:  # the reference: one item at a time
        s = reports.dataset_status(it, cur=cur)
        if s is not None:
            want[it.id] = s
    assert reports.stale_status(its, cur=cur) == want
    assert set(want) == {its[1].id, its[3].id}
    assert reports.dataset_status(sim, cur=cur) is None


def test_a_simulated_item_keeps_its_provenance_through_the_store(db):
    r = reports.create("Sim", actor=A, db=db)
    sim = report.ReportItem.from_result("Sweep", fig=go.Figure(), provenance="simulated")
    reports.add_item(r.id, sim, actor=A, db=db)
    reports.add_item(r.id, item(), actor=A, db=db)
    back = reports.items(r.id, actor=A, db=db)
    assert [(b.provenance, b.dataset, b.origin) for b in back] == [
        ("simulated", "", "simulated"), ("dataset", "sample", "sample")]
    # items saved before provenance existed read back as dataset-bound
    old = {k: v for k, v in item().to_dict().items() if k != "provenance"}
    assert report.ReportItem.from_dict(old).provenance == "dataset"


def test_provenance_is_validated():
    with pytest.raises(ValueError, match="provenance"):
        report.ReportItem(title="x", provenance="guessed")
    with pytest.raises(ValueError, match="no dataset"):
        report.ReportItem(title="x", dataset="sample", provenance="simulated")



def test_reads_reuse_the_catalog_until_any_process_changes_it(db, monkeypatch):
    """Reads of the report tables are kept with the store's file stamp: a page view's
    repeated reads open the catalog once, and a change made by another process is read
    at once."""
    r = reports.create("Before", actor=A, db=db)
    reports.add_item(r.id, item(), actor=A, db=db)
    from ulr.data import catalog as cat
    opened = []
    real = cat._open_catalog
    monkeypatch.setattr(cat, "_open_catalog", lambda path: opened.append(path) or real(path))
    for _ in range(3):
        assert reports.get_info(r.id, actor=A, db=db).name == "Before"
        assert [i.title for i in reports.items(r.id, actor=A, db=db)] == ["CTR by position"]
        assert reports.latest(actor=A, db=db).id == r.id
        assert [x.id for x in reports.list_reports(actor=A, db=db)] == [r.id]
    assert len(opened) == 4  # one read each of info, items, latest, list
    subprocess.run([sys.executable, "-c", "import sys; from ulr.report import saved as s; "
                    f"s.rename({r.id!r}, 'After', actor=s.OPERATOR, db=sys.argv[1])", db],
                   cwd=ROOT, check=True)
    assert reports.get_info(r.id, actor=A, db=db).name == "After"
    assert reports.list_reports(actor=A, db=db)[0].name == "After"
    # a reader that may not read it gets nothing from the cached value either
    reports.set_private(r.id, True, actor=A, db=db)
    assert reports.get_info(r.id, actor=B, db=db) is None
    with pytest.raises(reports.NoSuchReport):
        reports.items(r.id, actor=B, db=db)
