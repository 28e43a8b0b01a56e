"""Report items (ulr.report.item): round trip, validation, lists."""

import re

import pandas as pd
import pytest

from ulr import report
from ulr.errors import UlrError
from tests.report.items import XSS, make_items


def test_item_round_trip_and_ui_dict_format():
    a, _ = make_items()
    d = a.to_dict()
    assert report.ReportItem.from_dict(d) == a
    # The dict pages/_ui.add_to_report stores has no id; unknown keys are ignored.
    ui = {k: v for k, v in d.items() if k != "id"} | {"extra": 1}
    b = report.ReportItem.from_dict(ui)
    assert b.title == a.title and b.figure == a.figure and b.id and b.id != a.id
    df = a.frame()
    assert df["text"].tolist() == ["=cmd", "+x", "-x", "@x", XSS, "ok"]
    assert df["n"].dtype.kind == "i" and df["n"].tolist() == [-1, 2, -3, 4, 5, 6]
    assert df["f"].dtype.kind == "f"
    assert a.fig().data[0].name == "em"
    # A meaningful index becomes a column; strings that look like numbers stay text.
    t = pd.DataFrame({"v": [1.0, 2.0]}, index=pd.Index(["naive", "ipw"], name="ranker"))
    c = report.ReportItem.from_result("t", table=t)
    assert c.frame()["index"].tolist() == ["naive", "ipw"]
    s = report.ReportItem.from_result("s", table=pd.DataFrame({"id": ["007", "-5"]}))
    assert s.frame()["id"].tolist() == ["007", "-5"]


@pytest.mark.parametrize("change, needle", [
    ({"title": ""}, "non-empty title"),
    ({"title": "   "}, "non-empty title"),
    ({"title": "x" * 301}, "at most 300"),
    ({"title": 5}, "non-empty title"),
    ({"note": 3}, "note must be text"),
    ({"figure": "{not json"}, "figure is not valid JSON"),
    ({"figure": "[1, 2]"}, "plotly figure JSON"),
    ({"table": '{"data": []}'}, "split"),
    ({"settings": [1]}, "settings must be a dict"),
    ({"settings": {"f": object()}}, "JSON-able"),
    ({"dataset": 3}, "'dataset' must be text"),
])
def test_item_validation(change, needle):
    a, _ = make_items()
    with pytest.raises(ValueError, match=re.escape(needle)):
        report.ReportItem(**(a.to_dict() | change))


def test_broken_item_in_a_list_is_a_user_error():
    a, _ = make_items()
    with pytest.raises(UlrError, match="report item 2 is broken"):
        report.build_html([a, {"title": "x", "figure": "nope"}])
    with pytest.raises(UlrError, match="report item 1 is broken"):
        report.build_zip(["not a dict"])
