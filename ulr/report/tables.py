"""A report's tables as a ZIP of CSVs, with ``index.csv`` describing every item."""

from __future__ import annotations

import datetime as _dt
import io
import json
import zipfile

import pandas as pd

from ulr.export import safe_csv_bytes
from ulr.report.item import as_items
from ulr.quantity import json_numbers, timestamp
from ulr.text import file_slug, words



def _slug(text: str, n: int = 40) -> str:
    """The title as a file name of at most ``n`` characters, cut between words."""
    return file_slug(text, n) or "table"


def build_zip(items, *, readme: bool = True) -> bytes:
    """ZIP of every item's table as CSV, plus ``index.csv`` describing the items.

    Every CSV (tables and index) goes through :func:`ulr.export.safe_csv_bytes`:
    text cells starting with ``=``, ``+``, ``-`` or ``@`` get a leading
    apostrophe; numbers (negative ones included) stay numbers.
    File names are ``NN-<slug of the title>.csv`` in report order.
    """
    items = as_items(items)
    buf = io.BytesIO()
    index_rows = []
    stamp = _dt.datetime.now().timetuple()[:6]
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        def put(name, data):
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)

        for i, it in enumerate(items, start=1):
            df = it.frame()
            fname = f"{i:02d}-{_slug(it.title)}.csv" if df is not None else ""
            if df is not None:
                put(fname, safe_csv_bytes(df.rename(columns=words)))  # every digit kept
            index_rows.append({"item": i, "title": it.title, "file": fname, "kind": it.kind,
                               "dataset": it.dataset, "created": timestamp(it.created),
                               "version": it.version, "note": it.note,
                               "takeaway": it.takeaway,
                               "verdict": (it.verdict or {}).get("level", ""),
                               "caveats": "\n".join(it.caveats),
                               "evidence": json.dumps(json_numbers(it.evidence),
                                                      ensure_ascii=False),
                               "settings": json.dumps(json_numbers(it.settings),
                                                      ensure_ascii=False),
                               "content hash": it.content_hash})
        cols = ["item", "title", "file", "kind", "dataset", "created", "version", "note",
                "takeaway", "verdict", "caveats", "evidence", "settings", "content hash"]
        put("index.csv", safe_csv_bytes(pd.DataFrame(index_rows, columns=cols)))
        if readme:
            put("README.txt", "Tables of a ulr report, one CSV per report item (index.csv "
                "lists them).\nText cells that start with =, +, - or @ carry a leading "
                "apostrophe so that spreadsheet programs do not run them as formulas.\n")
    return buf.getvalue()

