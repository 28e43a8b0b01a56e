"""What the tests of ulr/report share: two report items (one full of hostile text),
and the HTML without its inline plotly.js."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from ulr import report, theme


XSS = "<script>alert(1)</script>"


def make_items():
    fig1 = theme.apply(go.Figure(go.Scatter(x=[1, 2, 3], y=[0.5, 0.25, 0.125], name="em")),
                       title="theta", x="position", y="theta")
    fig2 = go.Figure(go.Bar(x=["naive", "ipw"], y=[3.1, 2.7], name="arp"))
    table = pd.DataFrame({"text": ["=cmd", "+x", "-x", "@x", XSS, "ok"],
                          "n": [-1, 2, -3, 4, 5, 6],
                          "f": [-1.5, 0.25, np.nan, 1e-9, 2.0, -0.0]})
    a = report.ReportItem.from_result(XSS, fig=fig1, table=table, dataset="<b>ds</b>",
                                      settings={"eta": [0.5, 1.0], "<i>k</i>": "<u>v</u>"},
                                      note="line one\n<img src=x onerror=alert(2)>")
    b = report.ReportItem.from_result("Second chart", fig=fig2, dataset="sample")
    return a, b


def plotlyjs_free(doc: str) -> str:
    """The document without the one inline plotly.js bundle (which names URLs in its code)."""
    js = get_plotlyjs()
    assert doc.count(js) == 1
    return doc.replace(js, "")
