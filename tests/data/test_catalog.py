"""The store's catalog (ulr.data.catalog): names, replacing, readers and their views,
concurrent sessions and processes, the lock, the trash, old layouts, owners."""

import contextlib
import fcntl
import hashlib
import os
import re
import subprocess
import sys
import threading
import time

import duckdb
import numpy as np
import pandas as pd
import pytest

from tests.data.helpers import GOOD, ROOT, cli, fingerprint, write
from ulr.data import catalog, files, ingest
from ulr.data.log import OPERATOR
from ulr.data.summary import summary
from ulr.errors import UlrError
from ulr.simulate import simulate_clicks, write_log


@pytest.mark.parametrize("name", [
    "x'); DROP TABLE ulr_catalog; --",
    'robert"; DELETE FROM ulr_catalog; --',
    "ds_0000000000000000",
    "日本語 name with spaces / and \\ backslash",
])
def test_hostile_names_stored_verbatim(tmp_path, cur, name):
    ingest.load_log(write(tmp_path, GOOD), "other", cur=cur)
    res = ingest.load_log(write(tmp_path, GOOD), name, cur=cur)
    assert res.dataset == name
    assert [d.name for d in catalog.list_datasets(cur)] == ["other", name]
    assert catalog.open_dataset(name, cur=cur).df().shape[0] == 4
    catalog.rename_dataset(cur, name, name + " (2)")
    catalog.delete_dataset(cur, name + " (2)")
    assert [d.name for d in catalog.list_datasets(cur)] == ["other"]


def test_bad_names_and_unknown_dataset(tmp_path, cur):
    for bad in ["", "   ", "a\nb", "x" * 201]:
        with pytest.raises(UlrError):
            ingest.load_log(write(tmp_path, GOOD), bad, cur=cur)
    with pytest.raises(UlrError, match="no dataset named"):
        catalog.open_dataset("nope", cur=cur)


def test_duplicate_name_refused_then_replace(tmp_path, cur):
    ingest.load_log(write(tmp_path, GOOD), "d", cur=cur)
    with pytest.raises(UlrError, match="exists already"):
        ingest.load_log(write(tmp_path, GOOD), "d", cur=cur)
    text = GOOD + "q3,d9,1,1\n"
    res = ingest.load_log(write(tmp_path, text, "g.csv"), "d", cur=cur, replace=True)
    assert res.rows == 5 and len(catalog.list_datasets(cur)) == 1
    assert views(cur) >= {catalog.get_dataset(cur, "d").table}
    # the replaced file stays in the trash for a grace period (a session may be reading
    # it); once a later write sweeps it, the next listing drops its view
    files.TRASH_GRACE_S, grace = 0.0, files.TRASH_GRACE_S
    try:
        ingest.load_log(write(tmp_path, GOOD, "h.csv"), "e", cur=cur)
    finally:
        files.TRASH_GRACE_S = grace
    catalog.list_datasets(cur)
    assert views(cur) == {catalog.get_dataset(cur, n).table for n in ("d", "e")}


def views(cur):
    return {r[0] for r in cur.execute("SELECT table_name FROM information_schema.tables "
                                      "WHERE table_schema = 'main' AND table_name LIKE 'ds_%'"
                                      ).fetchall()}


def test_concurrent_sessions_upload_and_read(tmp_path):
    db = tmp_path / "conc.duckdb"
    ingest.load_log(write(tmp_path, GOOD, "seed.csv"), "seed", db_path=db)
    errors, results = [], {}

    def worker(i):
        try:
            c = catalog.cursor(db)  # one cursor per session/thread
            sim = simulate_clicks(queries=10, sessions=50, seed=i)
            p = tmp_path / f"w{i}.csv"
            write_log(sim.df, str(p))
            ingest.load_log(p, f"user {i}", cur=c)
            for _ in range(5):
                lg = catalog.open_dataset("seed", cur=c)
                assert summary(lg)["rows"] == 4
                catalog.list_datasets(c)
            results[i] = catalog.open_dataset(f"user {i}", cur=c).df().shape[0]
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results == {i: 500 for i in range(8)}
    assert len(catalog.list_datasets(catalog.cursor(db))) == 9


def stored_state(db):
    """Catalog rows plus the bytes of every file the catalog refers to.

    A load killed between placing its file and inserting its catalog row leaves an
    unreferenced file, which is no dataset; the next write sweeps it (checked below).
    """
    infos = catalog.list_datasets(catalog.cursor(db))
    rows = [(d.name, d.table, d.rows, d.content_hash, d.rejects_table) for d in infos]
    tables = {t for d in infos for t in (d.table, d.rejects_table) if t}
    stored = {f.name: hashlib.sha256(f.read_bytes()).hexdigest()
              for f in files.files_dir(db).glob("*.parquet") if f.stem in tables}
    return rows, stored


def big_csv(path, rows):
    rng = np.random.default_rng(0)
    pd.DataFrame({"query_id": rng.integers(0, 50_000, rows).astype(str),
                  "doc_id": rng.integers(0, 200_000, rows).astype(str),
                  "position": rng.integers(1, 11, rows),
                  "click": (rng.random(rows) < 0.05).astype(int)}).to_csv(path, index=False)
    return path


def test_datasets_are_parquet_files_and_a_reader_holds_no_lock(tmp_path):
    db = tmp_path / "s.duckdb"
    ingest.load_log(write(tmp_path, GOOD), "d", db_path=db)
    info = catalog.get_dataset(catalog.cursor(db), "d")
    assert (files.files_dir(db) / f"{info.table}.parquet").is_file()
    log = catalog.open_dataset("d", db)
    # while a reader holds its dataset open, another process lists and loads
    rc, out, err = cli("datasets", "--db", db)
    assert rc == 0 and "d\t4 rows" in out, err
    rc, out, err = cli("load", write(tmp_path, GOOD, "e.csv"), "--db", db, "--name", "e")
    assert rc == 0, err
    assert summary(log)["rows"] == 4
    assert [d.name for d in catalog.list_datasets(log.cur)] == ["d", "e"]  # read fresh


def test_two_concurrent_cli_loads_both_succeed(tmp_path):
    db = tmp_path / "c.duckdb"
    csvs = [big_csv(tmp_path / f"l{i}.csv", 200_000 + i) for i in range(2)]
    procs = [cli("load", f, "--db", db, "--name", f"load {i}", wait=False)
             for i, f in enumerate(csvs)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert {d.name: d.rows for d in catalog.list_datasets(catalog.cursor(db))} == \
        {"load 0": 200_000, "load 1": 200_001}


def test_busy_store_waits_then_says_so(tmp_path):
    db = tmp_path / "b.duckdb"
    with catalog.catalog(db):
        pass
    fd = os.open(str(db) + ".lock", os.O_RDWR)  # another holder (own open file description)
    fcntl.flock(fd, fcntl.LOCK_EX)
    waits = []
    try:
        t0 = time.monotonic()
        with pytest.raises(UlrError, match="busy with another load"):
            with catalog.catalog(db, on_wait=waits.append, timeout=0.3):
                pass
        assert 0.3 <= time.monotonic() - t0 < 2
        assert waits and waits == sorted(waits) and waits[-1] < 0.3
    finally:
        os.close(fd)
    with catalog.catalog(db, timeout=0.3) as con:  # free again
        assert con.execute("SELECT count(*) FROM ulr_catalog").fetchone()[0] == 0


def test_delete_while_reading_lets_the_read_finish(tmp_path):
    db = tmp_path / "r.duckdb"
    ingest.load_log(write(tmp_path, GOOD), "d", db_path=db)
    reader = catalog.open_dataset("d", db)
    catalog.delete_dataset(catalog.cursor(db), "d")
    assert summary(reader)["rows"] == 4  # files stay in the trash for a grace period
    with pytest.raises(UlrError, match="no dataset named 'd'"):
        catalog.open_dataset("d", cur=reader.cur)


def test_trash_and_orphans_are_swept_on_a_later_write(tmp_path, monkeypatch):
    db = tmp_path / "t.duckdb"
    ingest.load_log(write(tmp_path, GOOD), "d", db_path=db)
    catalog.delete_dataset(catalog.cursor(db), "d")
    folder = files.files_dir(db)
    dead = folder / ".tmp-999999999-0123456789abcdef.parquet"  # a load of a dead process
    dead.write_bytes(b"x")
    live = folder / f".tmp-{os.getpid()}-0123456789abcdef.parquet"  # a live concurrent load
    live.write_bytes(b"x")
    monkeypatch.setattr(files, "TRASH_GRACE_S", 0.0)  # read by files.sweep
    ingest.load_log(write(tmp_path, GOOD, "e.csv"), "e", db_path=db)
    info = catalog.get_dataset(catalog.cursor(db), "e")
    assert sorted(f.name for f in folder.iterdir()) == sorted([f"{info.table}.parquet",
                                                               live.name])


PRE_OWNER_CATALOG = ("CREATE TABLE ulr_catalog (name VARCHAR PRIMARY KEY, table_name VARCHAR "
                     "NOT NULL, rows BIGINT NOT NULL, source VARCHAR, content_hash VARCHAR, "
                     "loaded_at TIMESTAMP, mapping VARCHAR, columns VARCHAR, rejected BIGINT, "
                     "rejects_table VARCHAR)")


def test_old_layout_is_moved_to_parquet_without_loss(tmp_path):
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    con.execute(PRE_OWNER_CATALOG)
    con.execute("CREATE TABLE ds_00000000000000aa (query_id VARCHAR, doc_id VARCHAR, "
                "position BIGINT, click BOOLEAN)")
    con.execute("INSERT INTO ds_00000000000000aa VALUES ('q', 'd', 1, true), ('q', 'e', 2, false)")
    con.execute("INSERT INTO ulr_catalog VALUES ('old one', 'ds_00000000000000aa', 2, 'f.csv', "
                "'h', now(), '{}', '{\"query_id\": \"query_id\", \"doc_id\": \"doc_id\", "
                "\"position\": \"position\", \"click\": \"click\"}', 0, NULL)")
    con.close()
    log = catalog.open_dataset("old one", db)
    assert log.df().to_dict("list") == {"query_id": ["q", "q"], "doc_id": ["d", "e"],
                                        "position": [1, 2], "click": [True, False]}
    assert (files.files_dir(db) / "ds_00000000000000aa.parquet").is_file()
    with catalog.catalog(db) as c:
        assert c.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'ds_%'"
                         ).fetchone()[0] == 0


def _open_files(pid: int) -> set[str]:
    """The paths process ``pid`` has open now (empty once it has ended)."""
    out = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):  # closed between the listing and the read
                out.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return out


def _kill_when(p: subprocess.Popen, reached, timeout: float = 180) -> bool:
    """SIGKILL ``p`` the moment ``reached(p)`` holds; False if ``p`` ended first."""
    deadline = time.monotonic() + timeout
    while p.poll() is None and time.monotonic() < deadline:
        if reached(p):
            p.kill()
            return True
        time.sleep(0.002)
    return False


def test_kill_9_mid_load_leaves_the_store_byte_identical(tmp_path):
    """A load is killed at each step a process can be seen in, whatever the machine's
    speed: while it reads the file, while it writes the dataset's temporary Parquet file,
    and once that file is renamed into place (before its catalog row)."""
    db, rows = tmp_path / "k.duckdb", 400_000
    ingest.load_log(write(tmp_path, GOOD), "kept", db_path=db)
    before = stored_state(db)
    src = big_csv(tmp_path / "big.csv", rows)
    folder = files.files_dir(db)
    placed = set(folder.glob("ds_*.parquet"))
    steps = {
        "reading the file": lambda p: str(src) in _open_files(p.pid),
        "writing the dataset": lambda p: any(
            f.stat().st_size > 0 for f in folder.glob(f".tmp-{p.pid}-*.parquet")),
        "placing the file": lambda p: bool(set(folder.glob("ds_*.parquet")) - placed),
    }
    killed = []
    for step, reached in steps.items():
        p = cli("load", src, "--db", db, "--name", "big", wait=False)
        if _kill_when(p, reached):
            killed.append(step)
        p.wait()
        if "big" in {d.name for d in catalog.list_datasets(catalog.cursor(db))}:
            # published before the kill (the kill hit the exit): whole, never half
            log = catalog.open_dataset("big", db)
            assert log.info.rows == rows
            assert log.cur.execute(f"SELECT count(*) FROM {log.table}").fetchone()[0] == rows
            catalog.delete_dataset(catalog.cursor(db), "big")
            break
        assert stored_state(db) == before, step
    # the first two steps last as long as the file is large: they are always caught
    assert killed[:2] == ["reading the file", "writing the dataset"], killed
    rc, out, err = cli("load", src, "--db", db, "--name", "big")
    assert rc == 0, err
    assert catalog.get_dataset(catalog.cursor(db), "big").rows == rows
    assert not list(files.files_dir(db).glob(".tmp-*"))  # the dead loads' files are swept
    tables = {t for d in catalog.list_datasets(catalog.cursor(db))
              for t in (d.table, d.rejects_table) if t}
    with catalog.catalog(db) as con:  # deleted files wait in the trash for in-flight reads
        tables |= {t for (t,) in con.execute("SELECT table_name FROM ulr_trash").fetchall()}
    assert {f.stem for f in files.files_dir(db).glob("*.parquet")} <= tables


def test_catalog_blocks_nest_within_a_thread(tmp_path):
    db = tmp_path / "n.duckdb"
    ingest.load_log(write(tmp_path, GOOD), "d", db_path=db)
    with catalog.catalog(db, write=True, timeout=1) as con:
        con.execute("CREATE TABLE IF NOT EXISTS my_reports (title VARCHAR)")
        con.execute("INSERT INTO my_reports VALUES (?)", ["r"])
        assert [d.name for d in catalog.list_datasets(catalog.cursor(db))] == ["d"]
    with catalog.catalog(db) as con:
        assert con.execute("SELECT title FROM my_reports").fetchall() == [("r",)]


def test_catalog_reads_are_reused_until_any_process_changes_the_catalog(tmp_path, monkeypatch):
    """catalog.catalog_read: a page view's repeated catalog reads open the database once;
    a load, rename or delete, in this process or another, is seen on the next read."""
    db = tmp_path / "c.duckdb"
    ingest.load_log(write(tmp_path, GOOD), "one", db_path=db)
    cur = catalog.cursor(db)
    opened = []
    real_open = catalog._open_catalog
    monkeypatch.setattr(catalog, "_open_catalog", lambda p: opened.append(p) or real_open(p))

    def names():
        return [d.name for d in catalog.list_datasets(cur)]

    assert names() == ["one"]
    first = len(opened)
    for _ in range(5):
        assert names() == ["one"] and catalog.get_dataset(cur, "one").rows == 4
    assert len(opened) <= first + 1                       # one read of the row, then cached

    rc, _, err = cli("load", write(tmp_path, GOOD, "two.csv"), "--name", "two", "--db", db)
    assert rc == 0, err
    assert names() == ["one", "two"]                      # another process's load
    catalog.rename_dataset(cur, "one", "uno")
    assert names() == ["uno", "two"]                      # this process's rename
    with pytest.raises(UlrError, match="no dataset named 'one'"):
        catalog.get_dataset(cur, "one")
    subprocess.run([sys.executable, "-c", "import sys; from ulr.data import catalog; "
                    "catalog.delete_dataset(catalog.cursor(sys.argv[1]), 'two')", str(db)],
                   cwd=ROOT, check=True, timeout=120)
    assert names() == ["uno"]                             # another process's delete
    assert catalog.get_dataset(cur, "uno").rows == 4


def test_listing_again_asks_duckdb_nothing_until_the_catalog_changes(tmp_path):
    """A page view lists the datasets several times; a repeat on the same cursor reuses
    its views, and a load or delete by another process (or cursor) shows at once."""
    db = tmp_path / "t.duckdb"
    cur, other = catalog.cursor(db), catalog.cursor(db)
    ingest.load_log(write(tmp_path, "query_id,doc_id,position,click\nq,a,1,1\nq,b,2,0\n"),
                   name="one", cur=other)
    first = catalog.list_datasets(cur)
    queries = []

    class Spy:  # the cursor, counting what it is asked
        def __init__(self, c):
            self.c = c

        def execute(self, *a):
            queries.append(a[0])
            return self.c.execute(*a)

    catalog.list_datasets(cur)
    assert [d.name for d in catalog.list_datasets(cur)] == [d.name for d in first] == ["one"]
    spy = Spy(cur)
    catalog._cursors[spy] = catalog._cursors[cur]
    catalog.list_datasets(spy)
    assert queries == []
    rc, _, err = cli("load", write(tmp_path, "query_id,doc_id,position,click\nq,c,1,0\n",
                                   "g.csv"), "--db", db, "--name", "two")
    assert rc == 0, err
    assert [d.name for d in catalog.list_datasets(spy)] == ["one", "two"] and queries
    two = catalog.get_dataset(cur, "two")
    assert cur.execute(f"SELECT count(*) FROM {two.table}").fetchone()[0] == 1
    catalog.delete_dataset(other, "one")
    assert [d.name for d in catalog.list_datasets(cur)] == ["two"]
    with pytest.raises(UlrError, match="no dataset named 'one'"):
        catalog.open_dataset("one", cur=cur)


def test_sessions_share_one_reader_database_without_conflicts(tmp_path):
    """Every cursor of a store is a cursor of one in-memory database: views made by one
    are there for all, and eight threads opening datasets at once do not conflict."""
    db = tmp_path / "t.duckdb"
    for i in range(3):
        ingest.load_log(write(tmp_path, GOOD, f"f{i}.csv"), f"d{i}", db_path=db)
    errors, counts = [], []

    def session():
        try:
            cur = catalog.cursor(db)
            for d in catalog.list_datasets(cur):
                counts.append(summary(catalog.open_dataset(d.name, cur=cur))["rows"])
        except Exception as exc:  # noqa: BLE001 - collected for the assert
            errors.append(exc)

    threads = [threading.Thread(target=session) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and counts == [4] * 24
    a, b = catalog.cursor(db), catalog.cursor(db)
    table = catalog.get_dataset(a, "d0").table
    catalog.open_dataset("d0", cur=a)
    assert b.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 4


A, B = "browser:" + "a" * 32, "oidc:https://idp|bob"


def test_a_dataset_belongs_to_whoever_loaded_it(tmp_path, cur):
    from ulr.data.catalog import NotOwner
    from ulr.errors import Refused
    f = write(tmp_path, GOOD)
    assert ingest.load_log(f, "alice", cur=cur, actor=A).info.owner == A
    assert ingest.load_log(f, "by cli", cur=cur).info.owner == OPERATOR
    before = fingerprint(cur)
    for act in (lambda: catalog.delete_dataset(cur, "alice", actor=B),
                lambda: catalog.rename_dataset(cur, "alice", "mine now", actor=B),
                lambda: ingest.load_log(f, "alice", cur=cur, actor=B, replace=True),
                lambda: ingest.load_log(f, "alice", cur=cur, actor=B),
                lambda: catalog.delete_dataset(cur, "by cli", actor=A),
                lambda: catalog.delete_dataset(cur, "alice", actor=None)):
        with pytest.raises(NotOwner) as exc:
            act()
        assert "\n" not in str(exc.value) and re.search("operator|owner|Sign in", str(exc.value))
        assert fingerprint(cur) == before  # nothing changed
    # the name is someone else's: the refusal never suggests replacing it
    with pytest.raises(NotOwner, match="exists already, loaded by someone else; choose "
                                       "another name"):
        ingest.load_log(f, "alice", cur=cur, actor=B)
    # the owner is refused only the lift it may use: replace its own dataset
    with pytest.raises(Refused) as exc:
        ingest.load_log(f, "alice", cur=cur, actor=A)
    assert exc.value.option == "replace"
    with pytest.raises(NotOwner, match="Sign in to load"):
        ingest.load_log(f, "anon", cur=cur, actor=None)
    # B sees and uses A's dataset
    assert catalog.open_dataset("alice", cur=cur).df().shape == (4, 4)
    info = catalog.get_dataset(cur, "alice")
    assert (info.loaded_by(A), info.loaded_by(B), info.refusal(A, "delete")) == \
        ("you", "someone else", None)
    assert info.refusal(B, "delete") == ("“alice” was loaded by someone else; you can use it, "
                                         "but only they or the operator can delete it.")
    # the owner replaces, renames and deletes; the operator removes anyone's
    assert ingest.load_log(f, "alice", cur=cur, actor=A, replace=True).info.owner == A
    catalog.rename_dataset(cur, "alice", "alice 2", actor=A)
    catalog.delete_dataset(cur, "alice 2", actor=A)
    ingest.load_log(f, "bob", cur=cur, actor=B)
    catalog.delete_dataset(cur, "bob")  # the default actor: the operator
    assert [d.name for d in catalog.list_datasets(cur)] == ["by cli"]


def test_datasets_from_before_owners_are_kept_and_only_the_operator_removes_them(tmp_path):
    """A catalog without the owner column gains it; every dataset and its rows survive, a
    restart migrates nothing twice, and browsers may use but not remove the old ones."""
    import duckdb

    from ulr.data.catalog import NotOwner
    db = tmp_path / "old.duckdb"
    ingest.load_log(write(tmp_path, GOOD), "old", db_path=db)
    cur = catalog.cursor(db)
    rows = catalog.open_dataset("old", cur=cur).df()
    con = duckdb.connect(str(db))  # back to the catalog as it was before owners
    con.execute("ALTER TABLE ulr_catalog DROP COLUMN owner")
    con.close()
    catalog.clear_caches(db)  # as a new process: the catalog is checked again
    info = catalog.get_dataset(cur, "old")
    assert info.owner is None and info.loaded_by(A) == "nobody recorded"
    pd.testing.assert_frame_equal(catalog.open_dataset("old", cur=cur).df(), rows)
    with pytest.raises(NotOwner, match="before datasets had owners; you can use it, but only "
                                       "the operator can delete it"):
        catalog.delete_dataset(cur, "old", actor=A)
    with pytest.raises(NotOwner, match="before datasets had owners"):
        ingest.load_log(write(tmp_path, GOOD), "old", cur=cur, actor=A, replace=True)
    catalog.store_cache(db).ready = False  # migrating again is a no-op
    stamp = catalog._stamp(str(db.resolve()))
    assert catalog.get_dataset(cur, "old").owner is None
    assert catalog._stamp(str(db.resolve())) == stamp  # a migrated catalog is not written
    catalog.delete_dataset(cur, "old")  # the operator may
    assert catalog.list_datasets(cur) == []


def test_processes_opening_a_store_from_before_owners_at_once_all_see_every_dataset(tmp_path):
    """Four CLI processes meet a catalog without the owner column at the same moment: the
    lock lets one add it, and every one lists the old datasets, unowned and whole."""
    import json

    import duckdb
    db = tmp_path / "old.duckdb"
    for name in ("one", "two"):
        ingest.load_log(write(tmp_path, GOOD), name, db_path=db)
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE ulr_catalog DROP COLUMN owner")
    con.close()
    procs = [cli("datasets", "--db", db, "--json", wait=False) for _ in range(4)]
    outs = [p.communicate(timeout=180) + (p.returncode,) for p in procs]
    for out, err, rc in outs:
        assert rc == 0, err
        listed = json.loads(out)["datasets"]
        assert [(d["name"], d["rows"], d["owner"]) for d in listed] == \
            [("one", 4, None), ("two", 4, None)]
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM duckdb_columns() WHERE table_name = "
                       "'ulr_catalog' AND column_name = 'owner'").fetchone()[0] == 1
    con.close()


def test_a_killed_loads_temporary_files_are_swept_when_a_process_opens_the_store(tmp_path):
    """A load killed before its ``finally`` (kill -9) leaves ``.tmp-PID-*.parquet``; the next
    process to open the store removes it (issue 55), and never a live process's file."""
    import os
    import subprocess
    import sys

    from ulr.data import catalog, files
    db = tmp_path / "k.duckdb"
    folder = files.files_dir(db)
    folder.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = folder / f".tmp-{dead}-{'a' * 16}.parquet"
    live = folder / f".tmp-{os.getpid()}-{'b' * 16}.parquet"
    stale.write_bytes(b"PAR1")
    live.write_bytes(b"PAR1")
    catalog.list_datasets(catalog.cursor(db))  # the first open of this store here
    assert not stale.exists() and live.exists()


def test_the_caches_are_held_per_store_and_cleared_per_store(tmp_path):
    """What a process keeps about a store (catalog checked, catalog reads, reader database)
    lives in one StoreCache per store path; clearing one store leaves the others."""
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    for db in (a, b):
        ingest.load_log(write(tmp_path, GOOD), "x", db_path=db)
    ca, cb = catalog.store_cache(a), catalog.store_cache(b)
    assert ca is not cb and ca is catalog.store_cache(str(a)) and ca.path == str(a.resolve())
    cur_a, cur_b = catalog.cursor(a), catalog.cursor(b)
    assert [d.name for d in catalog.list_datasets(cur_a)] == ["x"]
    catalog.list_datasets(cur_b)
    assert ca.ready and ca.reads and cb.ready and cb.reads and ca.database is not cb.database
    catalog.clear_caches(a)
    assert not ca.ready and not ca.reads and cb.ready and cb.reads
    assert [d.name for d in catalog.list_datasets(cur_a)] == ["x"]  # read again from the file
    assert ca.ready and ca.reads
    catalog.clear_caches()
    assert not ca.reads and not cb.reads
