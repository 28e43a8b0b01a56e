"""Helpers shared by the browser tests."""

import os
import re
import time
from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

_IDLE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return app && app.getAttribute('data-test-script-state') === 'notRunning'
             && app.getAttribute('data-test-connection-state') === 'CONNECTED';
}"""


#: how often (ms) wait_idle asks the page whether the script run has ended. Playwright's
#: default polls on every animation frame, which makes the renderer draw 60 frames a second
#: for as long as a computation runs: a sixth of a core per waiting page, taken from the
#: server it waits on (the suite is CPU-bound on two cores).
POLL_MS = 100


def wait_idle(pg, timeout=60_000, settle_ms=400):
    """Wait until Streamlit has finished its script run and no new run starts right after."""
    deadline = time.time() + timeout / 1000
    while True:
        pg.wait_for_function(_IDLE_JS, polling=POLL_MS,
                             timeout=max(1, int((deadline - time.time()) * 1000)))
        pg.wait_for_timeout(settle_ms)
        if pg.evaluate(_IDLE_JS) or time.time() > deadline:
            return


#: ``ULR_E2E_SHOTS=1 pytest tests/e2e`` keeps a picture of each page a journey passes in
#: tests/artifacts. Off by default: nothing reads them, and each costs the browser a relayout
#: at the page's full height, a software raster and a PNG (15% of three journeys' CPU); a
#: failing test's page is pictured anyway (tests/e2e/conftest.py).
SHOTS = os.environ.get("ULR_E2E_SHOTS", "") not in ("", "0")


def shot(pg, name, *, always=False):
    """Screenshot of the whole page (with ``ULR_E2E_SHOTS=1``, or ``always``): Streamlit
    scrolls inside its main panel, so the viewport is stretched to the panel's height."""
    if not (SHOTS or always):
        return
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    size = pg.viewport_size
    height = pg.evaluate("""() => {
      const m = document.querySelector('[data-testid="stMain"]') || document.body;
      return Math.max(m.scrollHeight, document.body.scrollHeight);
    }""")
    pg.set_viewport_size({"width": size["width"], "height": min(int(height) + 40, 8000)})
    try:
        pg.wait_for_timeout(300)
        pg.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    finally:
        pg.set_viewport_size(size)


def download(pg, label, tmp_path, *, timeout=180_000):
    """Click the download button ``label`` and save its file in ``tmp_path``; its path."""
    with pg.expect_download(timeout=timeout) as info:
        pg.get_by_role("button", name=label).click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    return path


def no_errors(pg):
    errs = pg.locator('[data-testid="stException"], [data-testid="stAlertContentError"]')
    return [errs.nth(i).inner_text() for i in range(errs.count())]


# A command-line flag in a browser message (the app names controls, not flags).
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")


def pick(page, field: str, options):
    """Choose ``options`` in the mapping form's multiselect for ``field``."""
    box = page.locator('[data-testid="stMultiSelect"]').filter(
        has=page.get_by_text(re.compile(rf"^{re.escape(field)}( \*)?$")))
    box.first.click()
    for opt in options:
        page.keyboard.type(opt)
        page.get_by_role("option", name=opt, exact=True).click()
    page.keyboard.press("Escape")


def alerts(page) -> list[str]:
    """The text of every alert box on the page."""
    a = page.locator('[data-testid="stAlert"]')
    return [a.nth(i).inner_text() for i in range(a.count())]


def open_upload(page, app_url, path) -> None:
    """The Data page with ``path`` chosen in its upload form, the mapping form showing."""
    page.goto(app_url + "/data")
    wait_idle(page)
    page.get_by_text("Upload a click log", exact=True).click()
    page.locator('input[type="file"]').set_input_files(str(path))
    page.get_by_role("button", name="Load", exact=True).wait_for(timeout=60_000)
    wait_idle(page)
