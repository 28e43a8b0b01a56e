"""Test set-up: every test session works on its own throw-away database."""

import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_TMP = tempfile.mkdtemp(prefix="ulr_test_")
os.environ.setdefault("ULR_DB", os.path.join(_TMP, "ulr_test.duckdb"))
os.environ.setdefault("ULR_MEMORY_LIMIT", "2GB")

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser():
    """One headless Debian Chromium for the whole test session (never downloaded)."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (see .ci/run)")
        pytest.skip("no system Chromium at /usr/bin/chromium")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run"])
        yield b
        b.close()


