"""Fixtures of the store's tests (tests/data); plain helpers are in helpers.py."""

import pytest

from ulr.data import catalog


@pytest.fixture
def cur(tmp_path):
    """A reader on a store of the test's own."""
    return catalog.cursor(tmp_path / "t.duckdb")
