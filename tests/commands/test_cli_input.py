"""What anyone sends the loader (issue 55): one name per dataset, and refusals of any size that
stay one readable sentence (docs/contract.md §2: exit 2, one ``error:`` line)."""

import json

import pytest

from ulr.data import catalog

GOOD = "query_id,doc_id,position,click\nq,d,1,1\nq,e,2,0\n"


def _names(cli, db) -> list[str]:
    rc, out, err = cli("datasets", "--db", db, "--json")
    assert rc == 0, err
    return [d["name"] for d in json.loads(out)["datasets"]]


@pytest.fixture
def store(tmp_path, cli):
    db = tmp_path / "u.duckdb"
    good = tmp_path / "good.csv"
    good.write_text(GOOD)
    assert cli("load", good, "--db", db, "--name", "base")[0] == 0
    return db, good


@pytest.mark.parametrize("name, why", [
    (" base ", "exists already"),                 # trimmed: the same name
    ("Base", "reads like the stored dataset 'base'"),
    ("BASE\u200b", "reads like the stored dataset 'base'"),       # an invisible character
    ("b\u0430se", "reads like the stored dataset 'base'"),        # Cyrillic a
    ("ｂａｓｅ", "reads like the stored dataset 'base'"),          # fullwidth (NFKC)
    ("ba se", "reads like the stored dataset 'base'"),
])
def test_a_name_that_reads_like_a_stored_one_is_refused(store, cli, user_error, name, why):
    db, good = store
    user_error(cli("load", good, "--db", db, "--name", name), why)
    assert _names(cli, db) == ["base"]


def test_names_are_stored_trimmed_collapsed_and_composed(store, cli):
    db, good = store
    rc, out, err = cli("load", good, "--db", db, "--name", "  my \u00a0  cafe\u0301 ", "--json")
    assert rc == 0, err
    assert json.loads(out)["dataset"] == "my caf\u00e9"          # NFC: one character
    assert sorted(_names(cli, db)) == ["base", "my caf\u00e9"]


def test_a_rename_to_a_look_alike_is_refused_and_to_its_own_case_is_not(store, cli, tmp_path):
    db, good = store
    cur = catalog.cursor(db)
    assert cli("load", good, "--db", db, "--name", "other")[0] == 0
    with pytest.raises(catalog.UlrError, match="reads like the stored dataset 'base'"):
        catalog.rename_dataset(cur, "other", "BASE ")
    assert catalog.rename_dataset(cur, "base", " Base  ") == "Base"
    assert sorted(_names(cli, db)) == ["Base", "other"]


def _huge_header(path):
    with open(path, "wb") as fh:  # 80 MB of column names and no line break
        fh.write(b"query_id,doc_id,position,click")
        fh.write(b",c" * 40_000_000)


def _huge_cell(path):
    with open(path, "wb") as fh:  # a header, then one row with a 60 MB cell
        fh.write(b"query_id,doc_id,position,click\nq,")
        fh.write(b"x" * 60_000_000)
        fh.write(b",1,1\n")


@pytest.mark.parametrize("write, reason", [
    (_huge_header, "line 1 of huge.csv (its header) is 80 MB long"),
    (_huge_cell, "line 2 of huge.csv is 60 MB long"),
])
def test_a_huge_line_is_refused_in_one_short_sentence(store, cli, user_error, tmp_path,
                                                      write, reason):
    db, _ = store
    path = tmp_path / "huge.csv"
    write(path)
    before = _names(cli, db)
    result = cli("load", path, "--db", db, "--name", "huge")
    user_error(result, reason)
    line = result.err.strip()
    assert len(line) < 300 and line.endswith("nothing was stored."), line
    assert _names(cli, db) == before
    files = catalog.files.files_dir(db)
    assert not [f for f in files.iterdir() if f.name.startswith(".tmp-")]
    path.unlink()


def test_a_source_name_that_reads_like_a_registered_one_is_refused(cli, user_error, tmp_path):
    from ulr.simulate import simulate_clicks
    db = tmp_path / "store" / "ulr.duckdb"
    simulate_clicks(queries=5, positions=3, sessions=50, seed=1).df.to_parquet(
        tmp_path / "a.parquet")
    assert cli("source", "add", "lake", "--path", tmp_path / "a.parquet", "--db", db).rc == 0
    for alike in ("LAKE", "1ake"):
        user_error(cli("source", "add", alike, "--path", tmp_path / "a.parquet", "--db", db),
                   "reads like the registered source 'lake'")


def test_a_load_stopped_by_sigterm_removes_its_temporary_files(tmp_path):
    """kill (SIGTERM) during a load: the command ends like Ctrl-C (exit 130, one line) and
    its temporary Parquet files are gone (issue 55)."""
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT
    csv = tmp_path / "big.csv"
    csv.write_text("query_id,doc_id,position,click\n" + "".join(
        f"q{i % 997},d{i % 89},{1 + i % 10},{i % 2}\n" for i in range(400_000)))
    db = tmp_path / "t.duckdb"
    folder = catalog.files.files_dir(db)
    p = subprocess.Popen([sys.executable, "-m", "ulr", "load", str(csv), "--db", str(db),
                          "--name", "big"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    seen = False
    while p.poll() is None:
        if folder.is_dir() and any(f.name.startswith(".tmp-") for f in folder.iterdir()):
            p.send_signal(signal.SIGTERM)
            seen = True
            break
        time.sleep(0.001)
    out, err = p.communicate(timeout=120)
    assert seen, "the load ended before its temporary file was seen"
    assert p.returncode == 130 and err.strip() == "error: interrupted", (p.returncode, err)
    assert not [f for f in folder.iterdir() if f.name.startswith(".tmp-")]
