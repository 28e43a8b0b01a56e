"""Soak tests: many sessions, the CLI and a cold server at once (issue: one store, many users).

Each test has deterministic bounds (fixed number of sessions, fixed files); they
check that nobody sees a traceback, another session's error or another's dataset.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from playwright.sync_api import expect

from tests.e2e.helpers import no_errors, shot, wait_idle

ROOT = Path(__file__).resolve().parents[2]

DEEP_LINKS = [
    "/position_bias?dataset=sample&methods=em",
    "/data?dataset=sample",
    "/compare_rankers?dataset=sample",
    "/severity_sweep?dataset=sample&etas=0,1&runs=1",
    "/bandit_lab?dataset=sample&steps=200&runs=1",
    "/off_policy?dataset=sample",
    "/debiased_recs?dataset=sample",
    "/?dataset=sample",
]


def _open_all(browser, base, paths):
    """Open every path in its own browser context, all before any has finished loading."""
    ctxs, pages = [], []
    for path in paths:
        ctx = browser.new_context(viewport={"width": 1300, "height": 900})
        pg = ctx.new_page()
        pg.set_default_timeout(90_000)
        ctxs.append(ctx)
        pages.append(pg)
    for pg, path in zip(pages, paths):
        pg.goto(base + path, wait_until="commit")
    return ctxs, pages


def _sidebar(pg):
    return pg.locator('[data-testid="stSidebar"]')


def test_simultaneous_deep_links_on_a_cold_server(browser, fresh_app_url):
    ctxs, pages = _open_all(browser, fresh_app_url, DEEP_LINKS)
    try:
        for pg, path in zip(pages, DEEP_LINKS):
            wait_idle(pg, timeout=120_000)
            # rendered through app.py's st.navigation: its menu titles and its dataset picker
            expect(_sidebar(pg).get_by_role("link", name="Position bias")).to_be_visible()
            expect(_sidebar(pg).get_by_role("combobox", name="Dataset")).to_have_value("sample")
            assert no_errors(pg) == [], path
        shot(pages[0], "soak_cold_start_position_bias")
    finally:
        for ctx in ctxs:
            ctx.close()
