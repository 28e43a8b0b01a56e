"""What a browser visitor may read: paths under the operator's roots only, resolved first;
masters and tables only as the operator allows; refusals that quote nothing of a file."""

import os
import subprocess
import sys

import pandas as pd
import pytest

from ulr import access
from ulr.access import AccessDenied
from ulr.engines.duckdb import expand

SECRET = "DB_PASSWORD=hunter2"


@pytest.fixture
def tree(tmp_path):
    """root/ (opened) with a lake and a link out; outside/ (not opened) with a secret."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "lake").mkdir(parents=True)
    outside.mkdir()
    df = pd.DataFrame({"query_id": [1], "doc_id": [2], "position": [1], "click": [0]})
    df.to_parquet(root / "lake" / "day0.parquet")
    df.to_csv(outside / "clicks.csv", index=False)
    (outside / ".env").write_text(SECRET + "\n")
    (root / "out").symlink_to(outside)
    (root / "links").mkdir()
    (root / "links" / "leak.csv").symlink_to(outside / "clicks.csv")
    return root, outside


def _denied(typed, roots, **kw):
    with pytest.raises(AccessDenied) as err:
        access.browser_path(typed, roots=roots, **kw)
    msg = str(err.value)
    assert SECRET not in msg and "hunter2" not in msg
    return msg


def test_settings_are_read_from_the_environment(tmp_path):
    env = {"ULR_DATA_ROOTS": f"{tmp_path}/a/.., ,s3a://bucket/lake/",
           "ULR_SPARK_MASTERS": "local[2], spark://h:7077,"}
    assert access.data_roots(env) == (os.path.realpath(tmp_path), "s3a://bucket/lake")
    assert access.spark_masters(env) == ("local[2]", "spark://h:7077")
    assert access.data_roots({}) == () and access.spark_masters({}) == ()


def test_a_path_under_a_root_is_resolved(tree):
    root, _ = tree
    roots = (str(root),)
    assert access.browser_path(str(root / "lake" / "day0.parquet"), roots=roots) == \
        str(root / "lake" / "day0.parquet")
    assert access.browser_path("lake/*.parquet", roots=roots) == str(root / "lake" / "*.parquet")
    assert access.browser_path(f"{root}/x/../lake/", roots=roots) == str(root / "lake")


@pytest.mark.parametrize("typed", ["{outside}/.env", "{outside}/clicks.csv", "/etc/passwd",
                                   "/etc/*", "../../", "{root}/../outside/*.csv",
                                   "{root}/out/clicks.csv", "{root}/lake/*/../../out/*.csv",
                                   "/dev/zero", "file:///etc/passwd"])
def test_anything_outside_the_roots_is_one_sentence_that_repeats_only_what_was_typed(
        tree, typed):
    root, outside = tree
    typed = typed.format(root=root, outside=outside)
    msg = _denied(typed, (str(root),))
    assert msg == (f"“{typed}” is not in a folder this server opens to the browser; upload "
                   "the file instead, or ask the operator to open its folder.")


def test_a_link_inside_a_root_to_a_file_outside_is_refused(tree):
    root, _ = tree  # links/leak.csv -> outside/clicks.csv
    _denied(str(root / "links" / "*.csv"), (str(root),))
    _denied(str(root / "links"), (str(root),))
    _denied("links/leak.csv", (str(root),))


def test_nothing_opened_means_no_server_path(tree):
    root, _ = tree
    assert "does not let the browser register server folders" in \
        _denied(str(root / "lake"), ())
    assert "does not let the browser register" in _denied("s3a://bucket/x", ())


def test_the_stores_own_files_are_never_a_source(tmp_path):
    db = tmp_path / "team.duckdb"
    own = tmp_path / "team_files"
    own.mkdir()
    pd.DataFrame({"query_id": [1], "doc_id": [1], "position": [1], "click": [1]}).to_parquet(
        own / "ds_1.parquet")
    db.write_bytes(b"not a csv")
    roots = (str(tmp_path),)
    _denied(str(own / "*.parquet"), roots, db_path=db)
    _denied(str(tmp_path), roots, db_path=db)  # the whole folder holds the store's files
    with pytest.raises(access.UlrError, match="no Parquet or CSV file matches"):
        access.browser_path(str(tmp_path / "*.duckdb"), roots=roots, db_path=db)


def test_uri_roots_are_prefixes():
    roots = ("s3a://bucket/lake",)
    assert access.browser_path("s3a://bucket/lake/day=1/", roots=roots) == \
        "s3a://bucket/lake/day=1/"
    for typed in ("s3a://bucket/lakehouse/x", "s3a://bucket/lake/../secrets",
                  "hdfs://bucket/lake/x"):
        _denied(typed, roots)


def test_masters_and_tables_only_as_the_operator_allows():
    assert access.browser_master("local[2]", masters=("local[2]",)) == "local[2]"
    with pytest.raises(AccessDenied, match="does not let the browser use Spark"):
        access.browser_master("local[2]", masters=())
    with pytest.raises(AccessDenied, match="pick one of: local\\[2\\]"):
        access.browser_master("spark://10.0.0.1:7077", masters=("local[2]",))
    assert access.browser_table("warehouse.clicks") == "warehouse.clicks"
    for bad in ("parquet.`/etc/passwd`", "csv.etc", "a.b.c", "x; DROP", "`t`"):
        with pytest.raises(AccessDenied):
            access.browser_table(bad)


def test_expand_takes_regular_parquet_or_csv_files_only(tmp_path):
    os.mkfifo(tmp_path / "pipe.csv")  # reading it would block forever
    (tmp_path / "store.duckdb").write_bytes(b"DUCK")
    (tmp_path / "loop").symlink_to(tmp_path)  # not followed
    with pytest.raises(access.UlrError, match="no Parquet or CSV file matches"):
        expand(str(tmp_path / "*.csv"))
    with pytest.raises(access.UlrError, match="no Parquet or CSV file matches"):
        expand(str(tmp_path))
    (tmp_path / "day0.csv").write_text("query_id,doc_id,position,click\n1,1,1,0\n")
    assert expand(str(tmp_path)) == ([str(tmp_path / "day0.csv")], "csv")


def test_cli_answers_paths_that_used_to_crash_with_exit_2(tmp_path):
    (tmp_path / "store.duckdb").write_bytes(b"DUCK")
    os.mkfifo(tmp_path / "pipe.csv")
    for path in (str(tmp_path / "*.duckdb"), str(tmp_path)):
        p = subprocess.run([sys.executable, "-m", "ulr", "source", "add", "x", "--path", path,
                            "--db", str(tmp_path / "s" / "ulr.duckdb")],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 2, p.stderr
        assert p.stderr.startswith("error: no Parquet or CSV file matches") and \
            p.stderr.count("\n") == 1


def test_read_errors_name_the_file_and_line_never_the_content(tmp_path):
    from ulr import engines
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,doc_id,position,click\n1,1,1,0\n1,2,hunter2,0\n")
    with pytest.raises(access.UlrError) as err:
        from ulr.data.scan import cell_stats
        cell_stats(engines.get("duckdb").scan(path=str(bad)))
    assert "hunter2" not in str(err.value) and "bad.csv" in str(err.value)


def test_browser_source_reads_a_plain_spark_name_as_a_table(monkeypatch, tree):
    root, _ = tree
    monkeypatch.setenv("ULR_DATA_ROOTS", str(root))
    monkeypatch.setenv("ULR_SPARK_MASTERS", "local[2]")
    assert access.browser_source(" warehouse.clicks ", "spark", "local[2]") == \
        (None, "warehouse.clicks", "local[2]")
    assert access.browser_source("lake/*.parquet", "spark", "local[2]") == \
        (str(root / "lake" / "*.parquet"), None, "local[2]")
    assert access.browser_source("lake", "duckdb", None) == (str(root / "lake"), None, None)
    with pytest.raises(AccessDenied):
        access.browser_source("warehouse.clicks", "spark", "yarn")


def test_a_glob_matching_a_link_out_gets_the_roots_refusal_before_any_type_check(tree):
    """root/*/*.* matches a Parquet file inside and a CSV link to a file outside: the roots'
    refusal, not "mixes Parquet and CSV files" (issue 55: path checks come first)."""
    root, _ = tree
    typed = f"{root}/*/*.*"
    msg = _denied(typed, (str(root),))
    assert msg.startswith(f"“{typed}” is not in a folder this server opens"), msg
    assert "mixes" not in msg
