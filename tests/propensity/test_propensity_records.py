"""Issue 53: what the modules worked out by comparing a position-bias method's name now
comes from its record. These pin the records' flags to exactly what the name tests gave,
and show that a new record with the flags is treated as the named method was."""

import numpy as np
import pytest

from ulr import propensity, theme
from ulr.lists import MappingWarning, theta_warnings
from ulr.propensity import registry
from ulr.propensity.result import PropensityResult

OLD_COLORS = {"randomization": "#0072B2", "em": "#D55E00", "regression-em": "#009E73",
              "dla": "#CC79A7", "intervention-harvesting": "#E69F00"}


def test_flags_give_what_the_name_tests_gave():
    assert registry.flagged("randomized") == ("randomization",)
    assert registry.flagged("pairs") == ("em", "intervention-harvesting", "trust-em")
    assert registry.flagged("opens") == ("randomization", "em")
    assert registry.flagged("trust") == ("trust-em",)
    for m in propensity.METHODS:
        s = registry.spec(m)
        rand = m == "randomization"
        assert s.unit == ("randomized rows" if rand else "rows")
        assert s.analysis == ("randomization" if rand else "propensity")
        assert theme.color_for(m, 3) == OLD_COLORS.get(m, theme.PALETTE[3])
    assert registry.spec("not-registered") == registry.PLAIN
    assert not registry.spec(None).randomized


@pytest.fixture
def copy_of_randomization():
    propensity.register("rand-copy", propensity.REGISTRY["randomization"])
    yield "rand-copy"
    propensity.unregister("rand-copy")


def test_a_randomized_record_is_treated_as_randomization_was(copy_of_randomization):
    w = MappingWarning("randomization_contradicted", "m", share=1.0,
                       blocks=("randomization",))
    for name in ("randomization", copy_of_randomization):
        assert "rankers" in theta_warnings([w], name)[0].blocks
    assert theta_warnings([w], "em")[0].blocks == ("randomization",)
    kw = dict(positions=3, theta=np.array([1, .5, .25]), lower=np.array([1, .2, .05]),
              upper=np.array([1, .8, .5]), rows_used=500)
    settle = {name: PropensityResult.build(method=name, **kw).verdict.to_settle
              for name in ("randomization", copy_of_randomization, "em")}
    assert settle["randomization"] == settle[copy_of_randomization]
    assert settle["randomization"].startswith("about 9,700 more randomized rows would")
    assert settle["em"].startswith("about 9,700 more rows would")
    assert theme.color_for(copy_of_randomization) == OLD_COLORS["randomization"]
