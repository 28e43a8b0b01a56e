"""Static images and PDF (ulr.report.render)."""

import struct

import plotly.graph_objects as go
import pytest

from ulr import report
from ulr.errors import UlrError
from tests.report.items import make_items


def test_image_option_errors():
    with pytest.raises(UlrError, match="format"):
        report.to_image(go.Figure(), format="gif")
    with pytest.raises(UlrError, match="scale"):
        report.to_image(go.Figure(), scale=0)
    with pytest.raises(UlrError, match="width"):
        report.to_image(go.Figure(), width=5)
    with pytest.raises(UlrError, match="no chart"):
        report.to_images([report.ReportItem(title="only a note")],
                         browser=report.find_browser() or "/bin/sh")


@pytest.mark.skipif(report.static_export_problem() is not None,
                    reason="kaleido or system Chromium missing")
def test_png_and_pdf_through_system_chromium():
    from choreographer.cli._cli_utils import get_chrome_download_path

    downloaded = get_chrome_download_path(mkdir=False)
    existed = downloaded.exists()
    a, b = make_items()
    pngs = report.to_images([a, b.fig()], format="png", width=640, height=400, scale=1.5)
    for png in pngs:
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        w, h = struct.unpack(">II", png[16:24])  # IHDR: layout size times scale
        assert (w, h) == (960, 600)
    pdf = report.to_image(b.figure, format="pdf")
    assert pdf[:5] == b"%PDF-"
    assert downloaded.exists() == existed  # kaleido used the system browser, fetched none
    with pytest.raises(UlrError, match="no executable browser"):
        report.to_image(a, browser="/nonexistent/chromium")
