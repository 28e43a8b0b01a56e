"""Issue 53: the audit picks a position-bias method from the records' needs, not from
names. The reference below is the rule as the audit wrote it by name before; the records
must give the same choice on every combination of what a log offers."""

import itertools
from types import SimpleNamespace

from ulr.audit.questions import page_methods, position_bias_method


class Shape(SimpleNamespace):
    def blocked(self, analysis):
        return [SimpleNamespace(message=f"stop {analysis}")] if analysis in self.blocks else []


def reference(sh):
    """(position_bias_method's method, page_methods) by the documented rule."""
    if sh.positions < 2 or "propensity" in sh.blocks:
        pick = None
    elif sh.randomized and "randomization" not in sh.blocks:
        pick = "randomization"
    elif sh.pairs_at_several_positions:
        pick = "em"
    elif sh.features:
        pick = "regression-em"
    else:
        pick = None
    opens = [m for m, ok in (
        ("randomization", sh.has_randomized_rows and "randomization" not in sh.blocks),
        ("em", sh.pairs_at_several_positions and "propensity" not in sh.blocks)) if ok]
    return pick, opens or ([pick] if pick else [])


def test_the_records_choose_as_the_names_did():
    n = 0
    for pos, rnd, rows, pairs, feats, sess, blocks in itertools.product(
            (1, 5), (False, True), (False, True), (0, 7), ((), ("f1",)), (False, True),
            ((), ("randomization",), ("propensity",))):
        sh = Shape(positions=pos, randomized=rnd, has_randomized_rows=rows or rnd,
                   pairs_at_several_positions=pairs, features=feats, has_sessions=sess,
                   blocks=blocks, has_propensities=False, several_loggers=False, loggers=1)
        pick, opens = reference(sh)
        assert position_bias_method(sh)[0] == pick, sh
        assert page_methods(sh) == opens, sh
        n += 1
    assert n == 192
