"""Issue 26: an estimator is added through the registry alone (its module and one
``propensity.register`` call) and is then offered by the Position bias page and the CLI."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from ulr import propensity

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample_clicks.csv"


@pytest.fixture
def ctr_ratio():
    propensity.register("ctr-ratio", propensity.Method(
        "tests.propensity.dummy_ctr_ratio", "Raw CTR ratios (a test's dummy estimator).",
        rows="the rows (it reads the log with SQL)"))
    yield "ctr-ratio"
    propensity.unregister("ctr-ratio")
    assert "ctr-ratio" not in propensity.METHODS


def _reference(positions: int) -> np.ndarray:
    df = pd.read_csv(SAMPLE)
    ctr = df.groupby("position")["click"].mean().sort_index().to_numpy()[:positions]
    return ctr / ctr[0]


def test_the_cli_runs_a_registered_estimator(ctr_ratio, cli):
    import json
    rc, out, err = cli("propensity", "--input", SAMPLE, "--method", ctr_ratio, "--json")
    assert rc == 0, err
    theta = np.array(json.loads(out)["theta"], dtype=float)
    np.testing.assert_allclose(theta, _reference(len(theta)), rtol=1e-12)
    assert ctr_ratio in propensity.METHODS and ctr_ratio not in propensity.CELL_METHODS


def test_the_page_offers_and_draws_a_registered_estimator(ctr_ratio):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/position_bias.py").run()
    assert not at.exception, at.exception
    box = at.multiselect(key="pb_methods")
    assert ctr_ratio in box.options
    box.set_value([ctr_ratio])
    at.run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    mine = table[table["method"] == ctr_ratio].sort_values("position")
    np.testing.assert_allclose(mine["theta"], _reference(len(mine)), rtol=1e-12)
    helps = " ".join(str(box.help or "") for box in [at.multiselect(key="pb_methods")])
    assert "a test's dummy estimator" in helps
