"""The store's files (ulr.data.files): spill folders, the settings, and nothing run at
import."""

import dataclasses
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.data.helpers import GOOD, ROOT, cli, write
from ulr.data import files


def test_no_spill_folders_are_left_behind(tmp_path):
    db = tmp_path / "sp.duckdb"
    p = cli("load", write(tmp_path, GOOD), "--db", db, "--name", "d", wait=False)
    p.communicate(timeout=120)
    assert p.returncode == 0
    root = files.settings().spill_root
    leftovers = [d for d in (root.iterdir() if root.is_dir() else [])
                 if d.name.split("-")[0] == str(p.pid)]
    assert leftovers == []
    assert not (Path(tempfile.gettempdir()) / f"ulr_duckdb_{p.pid}").exists()


def test_a_query_that_spills_works_when_the_spill_root_is_missing(tmp_path):
    """DuckDB creates a connection's spill folder but not its parent: a missing root made
    the first aggregate larger than the memory limit fail (seen on 10M-session logs)."""
    root = tmp_path / "no" / "spill"
    before = files.settings()
    files.configure(dataclasses.replace(before, spill_root=root, memory_limit="64MB"))
    try:
        con = files.memory_connection()
    finally:
        files.configure(before)
    con.execute("SET threads = 1; SET preserve_insertion_order = false")
    n = con.execute("SELECT count(*) FROM (SELECT i, md5(i::VARCHAR) AS h FROM range(3000000) "
                    "t(i) ORDER BY h)").fetchone()[0]
    assert n == 3_000_000 and root.is_dir()
    con.close()


def test_nothing_runs_at_import_and_the_settings_are_read_on_first_use(tmp_path):
    """Importing every module of ulr/data reads no setting and sweeps no spill folder; the
    first use reads the environment and sweeps a dead process's spill folder."""
    dead = tmp_path / "ulr_spill" / "999999999-0"  # above any pid_max: no live process
    dead.mkdir(parents=True)
    code = ("import importlib, os, pkgutil, sys\nimport ulr.data\n"
            "for m in pkgutil.iter_modules(ulr.data.__path__):\n"
            "    importlib.import_module('ulr.data.' + m.name)\n"
            "from ulr.data import files\n"
            "print(os.path.isdir(sys.argv[1]))\n"
            "s = files.settings()\n"
            "print(os.path.isdir(sys.argv[1]), s.memory_limit, s.lock_timeout_s)\n")
    env = {**os.environ, "TMPDIR": str(tmp_path), "ULR_MEMORY_LIMIT": "123MB",
           "ULR_LOCK_TIMEOUT": "7"}
    p = subprocess.run([sys.executable, "-c", code, str(dead)], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["True", "False", "123MB", "7.0"]


def test_configure_reads_the_environment_again(monkeypatch):
    before = files.settings()
    monkeypatch.setenv("ULR_MEMORY_LIMIT", "512MB")
    monkeypatch.setenv("ULR_LOCK_TIMEOUT", "2.5")
    try:
        now = files.configure()
        assert (now.memory_limit, now.lock_timeout_s) == ("512MB", 2.5)
        assert files.settings() is now
    finally:
        files.configure(before)
    assert files.settings() is before
