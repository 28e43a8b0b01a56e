"""Pending upload copies (ulr.data.uploads): private, swept without a heartbeat, capped."""

import os
import stat
import time

import pytest

from ulr.data import uploads
from ulr.errors import UlrError


def test_copies_are_private_and_swept_once_their_form_stops_beating(tmp_path):
    db = tmp_path / "s.duckdb"
    path = uploads.write([b"a,b\n", b"1,2\n"], 8, key="up1", suffix=".csv", db_path=db)
    assert path.read_bytes() == b"a,b\n1,2\n"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert uploads.write([b"x"], 1, key="up1", suffix=".csv", db_path=db) == path  # kept
    now = time.time()
    assert uploads.sweep(db, now=now) == []                            # beating: kept
    assert uploads.sweep(db, now=now + uploads.STALE_S + 1) == [path]  # silent: swept
    assert not path.exists()
    p2 = uploads.write([b"x"], 1, key="up2", suffix=".csv", db_path=db)
    with uploads.in_use(p2):  # a load reading it: never swept
        assert uploads.sweep(db, now=now + 10 * uploads.STALE_S) == []
    uploads.remove(p2)
    assert list(p2.parent.iterdir()) == []


def test_a_folder_opened_to_others_is_closed_again(tmp_path):
    db = tmp_path / "s.duckdb"
    d = uploads.folder(db)
    os.chmod(d, 0o755)
    assert stat.S_IMODE(uploads.folder(db).stat().st_mode) == 0o700


def test_the_pending_copies_are_capped_in_one_sentence(tmp_path, monkeypatch):
    db = tmp_path / "s.duckdb"
    monkeypatch.setenv("ULR_UPLOADS_MAX_MB", "1")
    uploads.write([b"x" * 600_000], 600_000, key="a", suffix=".csv", db_path=db)
    with pytest.raises(UlrError) as err:
        uploads.write([b"x" * 500_000], 500_000, key="b", suffix=".csv", db_path=db)
    msg = str(err.value)
    assert msg.startswith("the server holds 0.6 MB of uploads waiting to be loaded"), msg
    assert "past its limit of 1 MB" in msg and msg.count(". ") == 0
    assert [p.name for p in uploads.folder(db).iterdir()] == ["a.csv"]  # nothing half-written


def test_names_from_a_visitor_never_leave_the_folder(tmp_path):
    db = tmp_path / "s.duckdb"
    p = uploads.path_of("../../etc/passwd", ".c/sv", db)
    assert p.parent == uploads.folder(db) and "/" not in p.name
