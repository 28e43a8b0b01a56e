"""The tables as a ZIP of CSVs (ulr.report.tables)."""

import csv
import io
import json
import zipfile

import numpy as np
import pandas as pd

from ulr import report
from tests.report.items import XSS, make_items


def neutralized_reference(v):
    """Slow obvious reference: what a text cell must look like in a safe CSV."""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return v


def test_zip_csvs_neutralize_formulas_but_keep_negative_numbers():
    a, b = make_items()
    hostile = report.ReportItem.from_result("=HYPERLINK(\"x\")", dataset="@evil",
                                            note="-note", table=pd.DataFrame({"v": [1]}))
    data = report.build_zip([a, b, hostile])
    zf = zipfile.ZipFile(io.BytesIO(data))
    names = zf.namelist()
    assert names == ["01-script-alert-1-script.csv", "03-hyperlink-x.csv", "index.csv",
                     "README.txt"]
    rows = list(csv.reader(io.StringIO(zf.read(names[0]).decode("utf-8"))))
    assert rows[0] == ["text", "n", "f"]
    df = a.frame()
    want_text = [neutralized_reference(v) for v in df["text"]]
    assert [r[0] for r in rows[1:]] == want_text == ["'=cmd", "'+x", "'-x", "'@x", XSS, "ok"]
    # Numbers are numbers: negative values keep their sign and no apostrophe.
    assert [r[1] for r in rows[1:]] == ["-1", "2", "-3", "4", "5", "6"]
    back = pd.read_csv(io.BytesIO(zf.read(names[0])))
    assert back["n"].tolist() == [-1, 2, -3, 4, 5, 6] and back["n"].dtype.kind == "i"
    assert back["f"].iloc[0] == -1.5 and np.isnan(back["f"].iloc[2])
    # The index lists every item, itself neutralized.
    idx = list(csv.DictReader(io.StringIO(zf.read("index.csv").decode("utf-8"))))
    assert [r["item"] for r in idx] == ["1", "2", "3"]
    assert [r["file"] for r in idx] == [names[0], "", names[1]]
    assert idx[2]["title"] == "'=HYPERLINK(\"x\")" and idx[2]["dataset"] == "'@evil"
    assert idx[2]["note"] == "'-note" and idx[0]["title"] == XSS
    assert json.loads(idx[0]["settings"])["eta"] == [0.5, 1.0]
    for name in names:
        if name.endswith(".csv"):
            for row in csv.reader(io.StringIO(zf.read(name).decode("utf-8"))):
                for cell in row:
                    assert not (cell[:1] in "=+@" and cell), (name, cell)
                    if cell.startswith("-"):
                        float(cell)  # only numbers may start with a minus


def test_zip_of_nothing_has_only_the_index():
    zf = zipfile.ZipFile(io.BytesIO(report.build_zip([])))
    assert zf.namelist() == ["index.csv", "README.txt"]
    assert zf.read("index.csv").decode().splitlines() == [
        "item,title,file,kind,dataset,created,version,note,takeaway,verdict,caveats,evidence,"
        "settings,content hash"]  # headers in words, as on every other surface
