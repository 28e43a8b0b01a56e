"""ulr.validate: one rule for level, n_bootstrap and seed, applied by every package."""

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

from ulr import metrics, propensity, stats, validate
from ulr.errors import UlrError
from ulr.validate import BadOption


@pytest.mark.parametrize("value", [0.5, 0.9, 0.95, 1e-9, 1 - 1e-9, np.float64(0.9)])
def test_level_accepts_numbers_strictly_inside_0_1(value):
    assert validate.level(value) == float(value)


@pytest.mark.parametrize("value", [0, 1, -0.1, 1.5, float("nan"), float("inf"), True, "x", None])
def test_level_refuses_the_rest(value):
    with pytest.raises(BadOption, match="level must lie strictly between 0 and 1") as err:
        validate.level(value)
    assert err.value.option == "level" and isinstance(err.value, UlrError)


@pytest.mark.parametrize("value, required, ok", [
    (0, False, True), (0, True, False), (1, False, False), (2, False, True),
    (2, True, True), (10_000, False, True), (10_001, False, False), (-1, False, False),
    (2.0, False, True), (2.5, False, False), (True, False, False), ("3", False, False),
    (np.int64(50), True, True)])
def test_n_bootstrap_is_0_or_2_to_10000(value, required, ok):
    if ok:
        assert validate.n_bootstrap(value, required=required) == int(value)
    else:
        with pytest.raises(BadOption) as err:
            validate.n_bootstrap(value, required=required, option="--bootstrap")
        assert err.value.option == "--bootstrap" and str(err.value).startswith("--bootstrap ")


@pytest.mark.parametrize("value, ok", [(0, True), (7, True), (2**40, True), (-1, False),
                                       (1.5, False), (False, False)])
def test_seed_is_a_whole_number_from_0(value, ok):
    if ok:
        assert validate.seed(value) == value
    else:
        with pytest.raises(BadOption):
            validate.seed(value)


def _metric():
    return metrics.ndcg([1, 0, 2, 0, 1, 0], [0.9, 0.1, 0.8, 0.3, 0.2, 0.4],
                        query_ids=[1, 1, 2, 2, 3, 3])


@pytest.mark.parametrize("call", [
    lambda lv, b: metrics.bootstrap_ci(_metric(), n_bootstrap=b, level=lv),
    lambda lv, b: metrics.paired_test(_metric(), _metric(), n_bootstrap=b, level=lv),
    lambda lv, b: stats.wilson_interval(3, 10, level=lv),
], ids=["bootstrap_ci", "paired_test", "wilson"])
def test_every_package_refuses_the_same_values(call):
    """The same bad level is refused the same way everywhere (one rule, one type)."""
    with pytest.raises(BadOption, match="level must lie strictly between 0 and 1"):
        call(1.0, 100)


def test_the_estimators_and_metrics_share_the_bootstrap_rule(open_df):
    from ulr.simulate import simulate_clicks
    log = open_df(simulate_clicks(queries=20, positions=3, sessions=300, seed=1).df)
    for bad in (1, -2, 10_001):
        with pytest.raises(BadOption, match="n_bootstrap must be 0 \\(no interval\\) or "):
            propensity.estimate(log, method="em", n_bootstrap=bad)
        with pytest.raises(BadOption, match="n_bootstrap must be between 2 and"):
            metrics.bootstrap_ci(_metric(), n_bootstrap=bad)
    with pytest.raises(BadOption, match="seed must be 0 or more"):
        propensity.estimate(log, method="em", seed=-1)


# --------------------------------------------------------------------------- validate.params


def test_params_checks_keyword_positional_and_returns_the_rules_values():
    @validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap,
                     seed=validate.seed)
    def f(x, level=0.95, *, n_bootstrap=100, seed=0):
        return x, level, n_bootstrap, seed

    assert f(1) == (1, 0.95, 100, 0)
    got = f(1, np.float64(0.9), n_bootstrap=np.int64(50), seed=2.0)
    assert got == (1, 0.9, 50, 2) and type(got[1]) is float and type(got[2]) is int \
        and type(got[3]) is int
    with pytest.raises(BadOption, match=r"^level must lie strictly between 0 and 1, got 1\.5\.$"):
        f(1, 1.5)  # by position
    with pytest.raises(BadOption, match=r"^level must lie strictly between 0 and 1, got 0\.$"):
        f(1, level=0)
    with pytest.raises(BadOption, match=r"^n_bootstrap must be between 2 and 10,000, got 0\.$"):
        f(1, n_bootstrap=0)
    with pytest.raises(BadOption, match=r"^seed must be 0 or more, got -1\.$") as err:
        f(1, seed=-1)
    assert err.value.option == "seed"
    assert f.__params__.keys() == {"level", "n_bootstrap", "seed"}
    assert list(inspect.signature(f).parameters) == ["x", "level", "n_bootstrap", "seed"]


def test_params_refuses_a_rule_for_a_parameter_the_function_lacks():
    with pytest.raises(TypeError, match="has no parameter level"):
        @validate.params(level=validate.level)
        def f(x, *, alpha=0.05):
            return x


def test_params_stacks_with_retired_and_on_methods():
    class C:
        @validate.retired(conf="level")
        @validate.params(level=validate.level)
        def m(self, level=0.95):
            return level

    assert C().m(0.5) == 0.5
    with pytest.raises(BadOption):
        C().m(2)
    with pytest.raises(TypeError, match="takes level=, not conf="):
        C().m(conf=0.5)


def test_params_on_a_frozen_dataclass_checks_when_built_and_when_replaced():
    import dataclasses

    @validate.params(level=validate.level, seed=validate.seed)
    @dataclasses.dataclass(frozen=True)
    class S:
        level: float = 0.95
        seed: int = 0

    assert S(level=np.float64(0.8), seed=np.int64(3)) == S(0.8, 3)
    with pytest.raises(BadOption, match="level must lie strictly between 0 and 1"):
        S(level=1.0)
    with pytest.raises(BadOption, match="seed must be 0 or more"):
        dataclasses.replace(S(), seed=-2)
    with pytest.raises(TypeError, match="needs a dataclass"):
        validate.params(level=validate.level)(type("Plain", (), {}))


def test_one_of_reads_its_choices_at_each_call():
    choices = ["a", "b"]
    rule = validate.one_of(lambda: choices, what="thing")
    assert rule("a") == "a"
    with pytest.raises(BadOption, match=r"^unknown thing 'c'; choose from a, b\.$"):
        rule("c")
    choices.append("c")
    assert rule("c") == "c"


# ------------------------------------------ every public function checks its options once

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("level", "n_bootstrap")
#: modules the rule does not reach yet, each with its reason; one whose functions all
#: declare their rules fails the test (remove it then)
NOT_YET = {
    "ulr/propensity/em.py": "EM's interval was being changed in parallel (issues 53, 54)",
    "ulr/propensity/bootstrap.py": "as above: the session bootstrap of EM's interval",
}


def _declared(fn: ast.FunctionDef) -> set[str]:
    out = set()
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and ast.unparse(d.func) == "validate.params":
            out |= {k.arg for k in d.keywords}
    return out


def undeclared(sources: dict[str, str]) -> tuple[list[str], set]:
    """``file:function(option)`` of every public function (and method of a public class)
    of a public module that takes an option of :data:`CHECKED` without declaring its rule
    with ``@validate.params``, but for :data:`NOT_YET`."""
    bad, seen = [], set()
    for path, text in sources.items():
        if any(part.startswith("_") and part != "__init__.py" for part in Path(path).parts):
            continue

        def walk(body):
            for n in body:
                if isinstance(n, ast.ClassDef) and not n.name.startswith("_"):
                    walk(n.body)
                elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                        not n.name.startswith("_") or n.name == "__init__"):
                    a = n.args
                    takes = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
                    missing = sorted((takes & set(CHECKED)) - _declared(n))
                    if missing and path in NOT_YET:
                        seen.add(path)
                    elif missing:
                        bad.append(f"{path}:{n.lineno} {n.name}({', '.join(missing)})")
        walk(ast.parse(text).body)
    return bad, seen


def _ulr_sources() -> dict[str, str]:
    return {f.relative_to(ROOT).as_posix(): f.read_text(encoding="utf-8")
            for f in sorted((ROOT / "ulr").rglob("*.py"))}


def test_every_public_function_taking_level_or_n_bootstrap_declares_its_rules():
    bad, seen = undeclared(_ulr_sources())
    assert bad == []
    assert set(NOT_YET) - seen == set(), "remove these from NOT_YET: they are checked now"


def test_the_declaration_check_can_fail():
    src = {"ulr/fake.py": "def f(x, *, level=0.95):\n    pass\n"
                          "@validate.params(level=validate.level)\n"
                          "def g(*, level=0.95, n_bootstrap=10):\n    pass\n"
                          "class C:\n    def m(self, level=0.9):\n        pass\n"
                          "def _private(level):\n    pass\n",
           "ulr/_private_module.py": "def f(level):\n    pass\n"}
    bad, _ = undeclared(src)
    assert bad == ["ulr/fake.py:1 f(level)", "ulr/fake.py:4 g(n_bootstrap)",
                   "ulr/fake.py:7 m(level)"]


def _declared_callables():
    import importlib
    import pkgutil

    import ulr
    found = {}
    for m in pkgutil.walk_packages(ulr.__path__, "ulr."):
        if m.name == "ulr.__main__":
            continue
        mod = importlib.import_module(m.name)
        for obj in vars(mod).values():
            for o in [obj, *(vars(obj).values() if isinstance(obj, type) else ())]:
                o = getattr(o, "__func__", o)  # classmethod
                if getattr(o, "__module__", None) == m.name and hasattr(o, "__params__"):
                    found[f"{m.name}.{o.__qualname__}"] = o
    return found


def test_every_declared_default_passes_its_rule():
    """The rules run per call on the values given; the defaults are checked here, once."""
    import dataclasses
    found = _declared_callables()
    assert "ulr.ope.evaluate.evaluate" in found and "ulr.ope.settings.OPESettings" in found
    for name, obj in found.items():
        if isinstance(obj, type):
            defaults = {f.name: f.default for f in dataclasses.fields(obj)
                        if f.default is not dataclasses.MISSING}
        else:
            defaults = {p.name: p.default for p in inspect.signature(obj).parameters.values()
                        if p.default is not p.empty}
        for option, rule in obj.__params__.items():
            if option in defaults:
                rule(defaults[option], option=option)  # raises on a bad default


# ------------------------------------- the same sentence through the API and the command line

SAMPLE_OPE = ROOT / "data" / "sample_ope.csv"


@pytest.mark.parametrize("flag, keyword, bad, sentence", [
    ("--level", "level", 1.5, "level must lie strictly between 0 and 1, got 1.5."),
    ("--bootstrap", "n_bootstrap", 1, "n_bootstrap must be between 2 and 10,000, got 1."),
    ("--seed", "seed", -1, "seed must be 0 or more, got -1."),
    ("--folds", "folds", 0, "the number of cross-fitting folds must be at least 1."),
    ("--clip", "clip", -2.0, "the clipping threshold must be a positive number."),
])
def test_ope_refuses_a_bad_option_with_one_sentence_on_the_cli_and_in_python(
        cli, user_error, flag, keyword, bad, sentence):
    from ulr.data import ingest
    from ulr.ope import OPESettings, evaluate_log

    rc, out, err = cli("ope", "--input", SAMPLE_OPE, flag, bad, "--json")
    user_error((rc, out, err), sentence)
    assert err.strip() == f"error: {sentence}"
    for call in (lambda: OPESettings(**{keyword: bad}),
                 lambda: evaluate_log(ingest.open_file(SAMPLE_OPE), **{keyword: bad})):
        with pytest.raises(BadOption) as exc:
            call()
        assert str(exc.value) == sentence and exc.value.option == keyword


def test_a_bad_option_is_refused_before_the_log_is_read(cli, user_error, tmp_path):
    user_error(cli("ope", "--input", tmp_path / "missing.csv", "--level", "2"),
               "level must lie strictly between 0 and 1, got 2.0.")


@pytest.mark.parametrize("argv, sentence", [
    (("ope-slate", "--input", ROOT / "data" / "sample_clicks.csv", "--level", "1.5"),
     "level must lie strictly between 0 and 1, got 1.5."),
    (("bandit", "--algorithm", "cascade-ucb1", "--steps", "10", "--seed", "-1"),
     "seed must be 0 or more, got -1."),
])
def test_other_commands_give_the_same_sentence(cli, user_error, argv, sentence):
    user_error(cli(*argv), sentence)


def test_level_is_refused_the_same_way_by_functions_that_never_checked_it():
    from ulr import verdict
    from ulr.ope import intervals
    from ulr.rankers import significance
    for call in (lambda: verdict.z_value(1.2), lambda: intervals.t_halfwidth([0.1, 0.2], level=1.0),
                 lambda: significance.t_test(np.array([0.1, 0.2, 0.3]), level=-0.5)):
        with pytest.raises(BadOption, match="level must lie strictly between 0 and 1"):
            call()
