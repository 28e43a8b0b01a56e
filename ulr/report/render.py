"""Rendering: charts as PNG/PDF/SVG (kaleido), HTML as PDF (Chromium), atomic writes."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import signal
import threading
import time
import uuid
from pathlib import Path

from ulr.errors import UlrError, check
from ulr.report.browser import export_folder, find_browser, static_export_problem
from ulr.report.deck import build_deck
from ulr.report.figures import figure_dict

_log = logging.getLogger(__name__)

IMAGE_FORMATS = ("png", "pdf", "svg")
_MIME = {"png": "image/png", "pdf": "application/pdf", "svg": "image/svg+xml"}



def _run_async(coro_fn):
    """Run ``coro_fn()`` to completion, also when called inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_fn())
    box = {}

    def target():
        try:
            box["v"] = asyncio.run(coro_fn())
        except BaseException as exc:  # re-raised in the caller's thread
            box["e"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join()
    if "e" in box:
        raise box["e"]
    return box["v"]


def image_browser(browser: str | None = None, *, format: str = "png", scale: float = 2.0,
                  width: int | None = None, height: int | None = None) -> str:
    """The browser that renders static images (``browser``, default :func:`find_browser`),
    after checking the options of :func:`to_images`; raises :class:`UlrError` as it does."""
    if format not in IMAGE_FORMATS:
        raise UlrError(f"image format must be one of {', '.join(IMAGE_FORMATS)}, not "
                       f"{format!r}.")
    if not (0 < float(scale) <= 10):
        raise UlrError("image scale must lie in (0, 10].")
    for name, v in (("width", width), ("height", height)):
        if v is not None and not (10 <= int(v) <= 10_000):
            raise UlrError(f"image {name} must lie between 10 and 10000 pixels.")
    if browser is None:
        problem = static_export_problem()
        if problem:
            raise UlrError(problem)
        browser = find_browser()
    elif importlib.util.find_spec("kaleido") is None:
        raise UlrError(static_export_problem())
    if not (os.path.isfile(browser) and os.access(browser, os.X_OK)):
        raise UlrError(f"there is no executable browser at {browser}.")
    return browser


def to_images(figures, *, format: str = "png", width: int | None = None,
              height: int | None = None, scale: float = 2.0, browser: str | None = None,
              timeout: float = 60.0) -> list[bytes]:
    """Render charts as static images through kaleido and the system Chromium.

    One browser session renders all ``figures`` (plotly figures, their JSON or
    dicts, or :class:`~ulr.report.item.ReportItem`), so many images cost one browser start.
    kaleido is pointed at ``browser`` (default :func:`find_browser`) with its
    ``path`` option; MathJax is off so the page loads nothing from the web.
    Each image is rendered once per chart and options and kept with the saved
    reports (:func:`ulr.report.drawn.kept`); only those not kept start the browser.

    Raises
    ------
    UlrError
        When kaleido or Chromium is missing, or the browser fails to render.
    """
    path = image_browser(browser, format=format, scale=scale, width=width, height=height)
    dicts = [figure_dict(f) for f in figures]
    if not dicts:
        return []
    opts = []
    for d in dicts:
        lay = d.get("layout", {}) or {}
        opts.append({"format": format, "scale": float(scale),
                     "width": int(width or lay.get("width") or 900),
                     "height": int(height or lay.get("height") or 500)})
    from ulr.report import drawn
    keys = [drawn.digest(drawn.code(), "image", sorted(o.items()), drawn.figure_key(d))
            for d, o in zip(dicts, opts)]
    return drawn.kept("image", keys, lambda missing: _render(
        [dicts[i] for i in missing], [opts[i] for i in missing], path, timeout))


#: formats whose pictures depend on the chart alone, not on what the page drew before
_NO_RELOAD = ("png", "svg")
_KALEIDO: list = []


def _Kaleido():
    """kaleido's session that renders each chart in the page it rendered the last one in.

    kaleido reloads its page after every chart: the page parses plotly.js again
    (3.5 MB: 0.5 to 0.8 s a chart on this machine, two thirds of a 12-chart deck's
    rendering). ``Plotly.toImage`` draws each PNG or SVG in a fresh div that it then
    removes, so the picture is the same bytes in a page that drew others before
    (tests/report/test_drawn.py); kaleido's PDF format keeps a page-wide background
    colour from the first chart, so PDFs keep the reload.
    """
    if not _KALEIDO:
        import kaleido

        class Kaleido(kaleido.Kaleido):
            async def _return_kaleido_tab(self, tab):  # noqa: D401 - kaleido's hook
                await self.tabs_ready.put(tab)  # no reload: see above

        _KALEIDO.append(Kaleido)
    return _KALEIDO[0]


def _render(dicts: list, opts: list, path: str, timeout: float) -> list[bytes]:
    """kaleido's images of ``dicts`` with ``opts``, in one session of the browser ``path``."""
    if not dicts:
        return []
    import kaleido

    def render_in(folder: Path):
        # kaleido's page and its browser profile both live in our export folder.
        index = folder / "index.html"
        index.write_text(kaleido.PageGenerator(mathjax=False).generate_index(),
                         encoding="utf-8")

        async def render():
            out = []
            kind = _Kaleido() if all(o["format"] in _NO_RELOAD for o in opts) else \
                kaleido.Kaleido
            async with kind(n=1, timeout=timeout, page_generator=str(index),
                            path=path, tmp_dir=str(folder)) as k:
                for d, o in zip(dicts, opts):
                    out.append(await k.calc_fig(d, opts=o))
            return out
        return render

    try:
        with export_folder() as folder:
            return _run_async(render_in(folder))
    except UlrError:
        raise
    except Exception as exc:  # browser missing/crashed/timed out
        msg = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise UlrError(f"Chromium at {path} could not render the chart: {msg}") from None


def kept_images(groups, *, browser: str, timeout: float = 60.0, db=None) -> list[list[bytes]]:
    """Images kept with the saved reports, those not kept rendered in ONE kaleido session.

    ``groups`` is ``[(kind, keys, spec), ...]``: each image is kept under ``(kind, key)``
    (:func:`ulr.report.drawn.kept_many`) and ``spec(j)`` gives the chart (a plotly dict)
    and kaleido's options of the ``j``-th key of its group, asked only for those drawn.
    The slide pictures of the PowerPoint deck and the charts of the printed deck (PNG and
    SVG: no page reload, :func:`_Kaleido`) share one browser start this way.
    """
    from ulr.report import drawn

    def draw(missing):
        specs = [groups[g][2](j) for g, j in missing]
        return _render([d for d, _ in specs], [o for _, o in specs], browser, timeout)
    return drawn.kept_many([(kind, keys) for kind, keys, _ in groups], draw, db=db)


def to_image(figure, *, format: str = "png", **kw) -> bytes:
    """One chart as PNG/PDF/SVG bytes (see :func:`to_images`)."""
    return to_images([figure], format=format, **kw)[0]


def image_mime(format: str) -> str:
    return _MIME[format]


def write_bytes(path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (a temporary file, then a rename)."""
    p = Path(path)
    if p.is_dir():
        raise UlrError(f"{p} is a directory, not a file name.")
    if not p.parent.exists():
        raise UlrError(f"the folder {p.parent} does not exist.")
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, p)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UlrError(f"cannot write {p}: {exc.strerror or exc}.") from None
    return p


def html_to_pdf(html_text: str, *, browser: str | None = None, timeout: float = 120.0,
                landscape: bool = True, should_stop=None) -> bytes:
    """Print an HTML document to PDF with the system Chromium (headless, offline).

    The document is written to a temporary file and printed with
    ``--print-to-pdf``; the window is A4 landscape sized so charts are laid out
    at print width. Raises :class:`UlrError` when no browser is installed or it fails.
    Chromium runs in its own session inside an :func:`export_folder`: a timeout,
    a failure or ``should_stop()`` (asked every 0.2 s; True raises
    :class:`ulr.errors.Cancelled`) kills all its processes and removes the
    folder, and folders left by a killed server are removed by the next export.
    """
    import subprocess

    browser = browser or find_browser()
    if browser is None:
        raise UlrError("PDF export needs Chromium (on Debian: apt-get install chromium), "
                       "which is not installed; set BROWSER_PATH to use another Chrome.")
    with export_folder() as tmp:
        src, out = Path(tmp) / "doc.html", Path(tmp) / "doc.pdf"
        src.write_text(html_text, encoding="utf-8")
        size = "1123,794" if landscape else "794,1123"
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-extensions", "--disable-background-networking",
               f"--user-data-dir={tmp}/profile", f"--window-size={size}",
               "--no-pdf-header-footer", "--run-all-compositor-stages-before-draw",
               "--virtual-time-budget=15000", f"--print-to-pdf={out}", src.as_uri()]
        log = Path(tmp) / "chromium.log"  # a file, not a pipe: nothing can block on it
        with open(log, "wb") as err_file:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err_file,
                                    start_new_session=True)  # its own group: killed as a whole
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    check(should_stop)
                    if time.monotonic() > deadline:
                        raise UlrError(f"Chromium did not finish the PDF within {timeout:.0f} "
                                       "s.") from None
        finally:
            # The whole group: renderers may outlive the browser. A group id is not
            # reused while any member lives, so this reaches only our processes.
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if not out.exists() or out.stat().st_size == 0:
            msg = " ".join(log.read_text(errors="replace").split())[-300:]
            raise UlrError(f"Chromium at {browser} could not print the PDF: {msg or 'no output'}")
        return out.read_bytes()


#: the time a kept PDF's key is built with (its own "Generated" time is the first export's)
_KEY_TIME = "2000-01-01T00:00:00"


def build_pdf(items, *, title: str = "ulr report", status: dict | None = None,
              should_stop=None, generated: str | None = None, db=None) -> bytes:
    """The slide deck as PDF, one slide per A4 landscape page (:func:`html_to_pdf`).

    When every chart's SVG picture (:func:`ulr.report.deck.print_pictures`) is kept,
    Chromium prints the deck with the pictures, not live Plotly charts (issue 54: the
    printed page has no plotly.js to parse and no chart to draw; the PDF stays vector).
    The pictures are drawn after a save with the slide pictures (:mod:`ulr.report.ahead`)
    and kept with the saved reports. When one is not kept yet (a first export right after
    saving, ``report LOG --format pdf``), the deck is printed with live charts as before:
    drawing the pictures first would start kaleido's browser before Chromium's print,
    3-4 s more than printing live (docs/benchmarks.md). Both PDFs are vector, with the
    same pages and text.

    The PDF is kept too (:func:`ulr.report.drawn.kept`) under the digest of the deck it
    prints, its "Generated" time aside: exporting the same report again returns the same
    PDF, which says when it was first generated, without starting Chromium.
    """
    from ulr.report import drawn
    from ulr.report.deck import print_pictures
    from ulr.report.item import as_items, now_text
    items = as_items(items)
    positions, group = print_pictures(items, status)
    pictured = bool(positions) and static_export_problem() is None

    def deck(when, pictures):
        return build_deck(items, title=title, status=status, paper=True, generated=when,
                          pictures=pictures)

    def print_it(missing):
        pictures = None if positions else {}  # {}: no chart, no plotly.js; None: live
        if pictured:
            got = drawn.peek(*group[:2], db=db)  # one not kept yet: live charts (faster)
            if got is not None:
                pictures = dict(zip(positions, got))
        return [html_to_pdf(deck(generated, pictures), should_stop=should_stop)]

    # the key: the deck as printed, each picture standing for the key it is kept under (a
    # picture's version and size; its SVG's element ids are drawn at random by plotly)
    stand_in = (dict(zip(positions, (k.encode() for k in group[1]))) if pictured
                else None if positions else {})
    key = drawn.digest(drawn.code(), "pdf", deck(_KEY_TIME, stand_in))
    generated = generated or now_text()
    return drawn.kept("pdf", [key], print_it, db=db)[0]
