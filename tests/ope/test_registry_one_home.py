"""One home per estimator (issue 53): registering one record is the only change a new
off-policy estimator needs. A test-only estimator (IPS with its weights halved, so its
truth, its terms and its largest weight are known in closed form) reaches evaluate, the
intervals, the simulation (point estimates, the study, ``ope-study``), ``auto``'s candidates
(SLOPE), ``ope --help``, the Off-policy page's two estimator pickers, the theme and the
contract's generated list; and no module of the task names an estimator outside its record
(tests/test_one_home.py scans all of ulr/ and pages/).
"""

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from ulr import theme
from ulr.ope import intervals as iv
from ulr.ope import registry
from ulr.ope.evaluate import evaluate
from ulr.ope.simulate import contextual_world, repeated_point_estimates, simulate_bandit
from ulr.ope.selection import auto_families, select
from ulr.ope.study import simulation_study

ROOT = Path(__file__).resolve().parents[2]
NAME = "half-ips"


@pytest.fixture
def half_ips():
    """``V = (1/n) sum_i (w_i / 2) r_i``: half of IPS, weight at most ``W / 2``."""
    e = registry.register(registry.Estimator(
        NAME, "half IPS", "importance",
        terms=lambda r, w, h, ql, qt: (0.5 * w * r, np.ones_like(w)),
        max_weight=lambda W, h: W / 2, color="#123456",
        description="Half an IPS estimate", cite="this test"))
    yield e
    registry.unregister(NAME)


def test_a_record_reaches_evaluate_and_the_intervals(half_ips):
    w = contextual_world(seed=1)
    s = w.sample(600, seed=2)
    fb, pi = w.feedback(s, whole=True)
    weight = pi[fb.pair] / fb.propensity
    slow = sum(0.5 * wi * ri for wi, ri in zip(weight, fb.reward)) / len(weight)
    res = evaluate(fb, pi, estimators=[NAME], n_bootstrap=50)
    assert res.estimate(NAME) == pytest.approx(slow, rel=1e-12)
    # biased (not unbiased): the verdict's references are added beside it, from the flags
    assert set(registry.references()) <= set(res.table["estimator"])
    # the finite-sample bound reads the record's largest weight: Hoeffding's half-width
    # (hi - lo) sqrt(log(2/alpha) / (2n)) with hi - lo = W' * max r, W' = W / 2
    W = float(weight.max())
    assert iv.effective_max_weight(NAME, W) == W / 2
    assert iv.term_range(NAME, max_weight=W) == (0.0, W / 2)
    b = iv.interval(NAME, fb.reward, weight, method="hoeffding", max_weight=W)
    half = (W / 2) * np.sqrt(np.log(2 / 0.05) / (2 * len(weight)))
    assert b.value == pytest.approx(slow, rel=1e-12)
    assert b.lower == pytest.approx(max(slow - half, 0.0), rel=1e-12)
    assert b.upper == pytest.approx(min(slow + half, W / 2, 1.0), rel=1e-12)
    t = evaluate(fb, pi, estimators=[NAME], n_bootstrap=50, interval="hoeffding").table
    row = t.set_index("estimator").loc[NAME]
    assert np.isfinite(row["lower"]) and row["lower"] <= row["value"] <= row["upper"]


def test_a_record_reaches_the_simulation_studies(half_ips, cli):
    sim = simulate_bandit(contexts=6, actions=4, n_features=3, logging="softmax", seed=3)
    pi = sim.policy(sim.beta, temperature=0.5)
    d = sim.sample(150, runs=5, seed=4)
    got = repeated_point_estimates(sim, pi, d, estimators=[NAME, "ips"])
    vals = got.pivot(index="draw", columns="estimator", values="value")
    for i in range(d.draws):  # the slow reference, draw by draw
        wi = pi[d.pair[i]] / d.propensity[i]
        assert vals.loc[i, NAME] == pytest.approx(np.mean(0.5 * wi * d.reward[i]), rel=1e-12)
        assert vals.loc[i, NAME] == pytest.approx(vals.loc[i, "ips"] / 2, rel=1e-12)
    out = simulation_study(contexts=5, actions=4, n_features=3, rows=100, runs=6,
                           estimators=(NAME,), seed=1)
    row = out.table.set_index("estimator").loc[NAME]
    assert row["draws"] == 6 and row["mean"] == pytest.approx(
        float(out.estimates.loc[out.estimates["estimator"] == NAME, "value"].mean()))
    rc, text, err = cli("ope-study", "--contexts", 5, "--actions", 4, "--n-features", 3,
                        "--rows", 100, "--runs", 6, "--estimators", f"ips,{NAME}", "--json")
    assert rc == 0, err
    assert {r["estimator"] for r in json.loads(text)["table"]} == {"ips", NAME}
    # every registered single-log estimator is accepted; a multi-logger one is refused
    assert set(registry.single_log()) == {k for k, e in registry.REGISTRY.items()
                                          if e.terms is not None and not e.needs_loggers}
    assert NAME in registry.single_log() and "wips" not in registry.single_log()


def test_a_record_reaches_the_theme_and_the_contract(half_ips):
    assert theme.color_for(NAME, 3) == "#123456"
    assert theme.metric_label(NAME) == "Half an IPS estimate"
    assert f"| `{NAME}` | half IPS |" in registry.contract_markdown()
    registry.unregister(NAME)
    assert theme.color_for(NAME, 3) == theme.PALETTE[3]  # gone with its record
    assert theme.metric_label(NAME) == NAME


@pytest.fixture
def half_ips_in_auto():
    """The same record as a candidate of ``auto`` (SLOPE; a chain of its own)."""
    registry.register(registry.Estimator(
        NAME, "half IPS", "importance", in_auto=True,
        terms=lambda r, w, h, ql, qt: (0.5 * w * r, np.ones_like(w)),
        max_weight=lambda W, h: W / 2, description="Half an IPS estimate", cite="this test"))
    yield NAME
    registry.unregister(NAME)


def test_a_record_reaches_auto_and_ope_help(half_ips_in_auto, capsys):
    assert NAME in auto_families()
    with pytest.raises(ValueError, match="a SLOPE chain orders a hyperparameter"):
        registry.register(registry.Estimator("chained", "chained", "importance", in_auto=True,
                                             chain=("ips", None), terms=lambda *a: a[:2]))
    assert "chained" not in registry.REGISTRY
    w = contextual_world(seed=1)
    s = w.sample(600, seed=2)
    fb, pi = w.feedback(s, whole=True)
    weight = pi[fb.pair] / fb.propensity
    sel = select(fb.reward, weight)
    row = sel.candidates.set_index("estimator").loc[NAME]
    assert row["value"] == pytest.approx(np.mean(0.5 * weight * fb.reward), rel=1e-12)
    from ulr.cli import main
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(["ope", "--help"])
    assert done.value.code == 0
    assert f",{NAME},auto" in "".join(capsys.readouterr().out.split())  # --estimators' list


def test_a_record_reaches_the_page(half_ips):
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "pages" / "off_policy.py"), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    assert "half IPS" in at.multiselect(key="ope_estimators").options  # its record's label
    at.segmented_control(key="ope_view").set_value("Simulation: bias and variance").run()
    assert not at.exception, at.exception
    assert "half IPS" in at.multiselect(key="sim_est").options


def test_the_contract_lists_every_estimator_as_the_registry_does():
    doc = (ROOT / "docs" / "contract.md").read_text()
    block = re.search(r"<!-- estimators:begin -->\n(.*?)<!-- estimators:end -->", doc, re.S)
    assert block and block.group(1) == registry.contract_markdown()
    for name in registry.REGISTRY:
        assert f"| `{name}` |" in block.group(1)
    assert f"[--estimators {','.join(registry.choices())}]" in doc


def test_flags_give_what_the_lists_were():
    """The lists the modules kept by hand, now derived from the records' flags."""
    assert registry.references() == ("ips", "snips")
    assert registry.slope_references() == ("ips", "snips", "dr", "sndr", "balanced-ips")
    assert registry.multi_logger() == ("wips", "balanced-ips")
    assert registry.fallback() == "snips" and registry.plain_reference() == "ips"
    assert registry.unreliable_by_warning() == {"heavy_tailed": ("ips", "clipped-ips")}
    assert registry.defaults() == ("ips", "clipped-ips", "snips", "dr")
    assert {k: theme.color_for(k) for k in ("ips", "clipped-ips", "snips", "dr")} == {
        "ips": "#D55E00", "clipped-ips": "#E69F00", "snips": "#0072B2", "dr": "#009E73"}


# the modules whose name lists and if-chains moved into the records
MOVED = ["ulr/ope/estimators.py", "ulr/ope/intervals.py", "ulr/ope/simulate.py",
         "ulr/ope/evaluate.py", "ulr/ope/estimates.py", "ulr/ope/diagnostics.py",
         "ulr/ope/reward_models.py", "ulr/ope/verdicts.py", "ulr/ope/selection.py",
         "ulr/ope/study.py", "ulr/theme.py", "ulr/commands/ope_study.py",
         "pages/_ope/simulation.py"]


def _named(path: Path) -> list[tuple[int, str]]:
    """Registered names a module compares, tests membership of, or lists as literals."""
    names = set(registry.REGISTRY)
    hits = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            parts = node.elts
        elif isinstance(node, ast.Dict):
            parts = node.keys
        else:
            continue
        hits += [(p.lineno, p.value) for p in parts
                 if isinstance(p, ast.Constant) and p.value in names]
    return hits


def test_no_module_of_the_task_names_an_estimator():
    found = {f: _named(ROOT / f) for f in MOVED}
    assert {f: h for f, h in found.items() if h} == {}
    # the scan finds a name where one is compared (it can fail)
    probe = ROOT / "tests" / "ope" / "test_registry_one_home.py"
    assert any(v == "ips" for _, v in _named(probe))
