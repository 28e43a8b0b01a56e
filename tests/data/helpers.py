"""Helpers of the store's tests (tests/data): a sample file, files written, a fingerprint of
a store, and the command line run as its own process."""

import hashlib
import subprocess
import sys
from pathlib import Path

import pandas as pd

from ulr.data import catalog

GOOD = "query_id,doc_id,position,click\nq1,d1,1,1\nq1,d2,2,0\nq2,d3,1,true\nq2,d1,2,false\n"


def write(tmp_path, text, name="f.csv", mode="w"):
    p = tmp_path / name
    if mode == "wb":
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def fingerprint(cur):
    """Catalog rows plus a hash of every stored table's contents."""
    out = []
    for d in catalog.list_datasets(cur):
        df = cur.execute(f"SELECT * FROM {d.table} ORDER BY ALL").df()
        h = hashlib.sha256(pd.util.hash_pandas_object(df, index=False).values.tobytes())
        out.append((d.name, d.table, d.rows, d.content_hash, h.hexdigest()))
    tables = sorted(r[0] for r in cur.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall())
    return out, tables


ROOT = Path(__file__).resolve().parents[2]


def cli(*args, wait=True):
    """``python -m ulr ARGS`` in a process of its own: ``(status, stdout, stderr)``, or the
    running process (``wait=False``)."""
    cmd = [sys.executable, "-m", "ulr", *map(str, args)]
    if not wait:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=180)
    return p.returncode, p.stdout, p.stderr
