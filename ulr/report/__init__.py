"""Reports: collected results exported as one offline HTML file, slides, a ZIP of CSVs, images.

One concept per module:

- :mod:`~ulr.report.item`: :class:`ReportItem`, one result with its provenance;
- :mod:`~ulr.report.saved`: reports saved in the store, and the data status of their items;
- :mod:`~ulr.report.parts`: what every HTML export shares (head, caveats box, tables);
- :mod:`~ulr.report.figures`: charts as exported, and their slide version;
- :mod:`~ulr.report.document`: :func:`build_html`, the long offline report;
- :mod:`~ulr.report.deck`: :func:`build_deck`, the offline slide deck;
- :mod:`~ulr.report.tables`: :func:`build_zip`, the tables as CSV;
- :mod:`~ulr.report.browser`: the system Chromium and the export folders of its runs;
- :mod:`~ulr.report.render`: images (kaleido), PDF (Chromium), atomic writes;
- :mod:`~ulr.report.drawn`: each chart drawn once per item version, and kept;
- :mod:`~ulr.report.powerpoint`: :func:`~ulr.report.powerpoint.build_pptx`.

The CSS and the deck's script are package files in ``ulr/report/assets``.
"""

from ulr.report.browser import (EXPORT_PREFIX, SYSTEM_BROWSERS, clean_orphans, export_folder,
                                find_browser, static_export_problem)
from ulr.report.browser import _start_time  # noqa: F401 (tests/report/test_browser.py)
from ulr.report.deck import (APPENDIX_CHARS, SLIDE_CAVEAT_CHARS, SLIDE_CAVEAT_MAX,
                             SLIDE_TABLE_ROWS, build_deck, kept_pictures, slide_caveats)
from ulr.report.document import MAX_TABLE_ROWS_HTML, build_html, write_html
from ulr.report.figures import SLIDE_CHART, export_figure, slide_figure
from ulr.report.item import (MAX_NOTE, MAX_TITLE, PROVENANCES, ReportItem, as_items,
                             default_takeaway)
from ulr.report.parts import (SETTING_CHARS, SETTING_ITEMS, evidence_text, setting_text,
                              settings_lines, verdict_badge)
from ulr.report.render import (IMAGE_FORMATS, build_pdf, html_to_pdf, image_browser,
                               image_mime, to_image, to_images, write_bytes)
from ulr.report.figures import shown_figure
from ulr.report.tables import build_zip

__all__ = [
    "APPENDIX_CHARS", "EXPORT_PREFIX", "IMAGE_FORMATS", "MAX_NOTE", "MAX_TABLE_ROWS_HTML",
    "MAX_TITLE", "PROVENANCES", "ReportItem", "SETTING_CHARS", "SETTING_ITEMS",
    "SLIDE_CAVEAT_CHARS", "SLIDE_CAVEAT_MAX", "SLIDE_CHART", "SLIDE_TABLE_ROWS",
    "SYSTEM_BROWSERS", "as_items", "build_deck", "build_html", "build_pdf",
    "build_zip", "clean_orphans", "default_takeaway", "evidence_text", "export_figure",
    "export_folder", "find_browser", "html_to_pdf", "image_browser", "image_mime",
    "kept_pictures", "setting_text",
    "settings_lines", "shown_figure", "slide_caveats", "slide_figure", "static_export_problem", "to_image",
    "to_images", "verdict_badge", "write_bytes", "write_html",
]
