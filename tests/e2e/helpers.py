"""Helpers shared by the browser tests."""

from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def wait_idle(pg, timeout=60_000):
    """Wait until Streamlit has finished the current script run."""
    pg.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    pg.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
        timeout=timeout)


def shot(pg, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def no_errors(pg):
    errs = pg.locator('[data-testid="stException"], [data-testid="stAlertContentError"]')
    return [errs.nth(i).inner_text() for i in range(errs.count())]
