"""Model choice: on a log simulated by a model, that model wins by held-out log-likelihood.

Where models nest, a nesting model may fit as well (it contains the truth): the
test then expects the true model within noise of the winner, and the winner to
be one of the models that contain it:

- cascade is DCM with lambda = 0, SDBN/DBN with sigma = 1, UBM with
  gamma_{r,0} = 1 and gamma_{r,r'>0} = 0;
- PBM is UBM with gamma_{r,r'} = theta_r;
- SDBN is DBN with gamma = 1.
DCM, DBN and UBM contain no other model's truth here, so they must win outright
(their gap intervals to every other model exclude 0).
"""

import pytest

from tests.clickmodels.helpers import sessions_of
from ulr.clickmodels import MODELS, evaluate

NESTED_IN = {"pbm": {"ubm"}, "cascade": {"dcm", "dbn", "sdbn", "ubm"}, "sdbn": {"dbn"},
             "dcm": set(), "dbn": set(), "ubm": set()}
N = 10000


@pytest.mark.parametrize("truth", list(MODELS))
def test_the_true_model_wins_on_its_own_log(simulated, truth):
    S = sessions_of(simulated(truth, N), test_every=4)
    res = evaluate.compare(S, list(MODELS), n_bootstrap=100, seed=3, refit_intervals=False)
    if not NESTED_IN[truth]:
        assert res.best == truth, res.to_dict()["verdict"]
        assert all(s.gap_interval[0] > 0 for s in res.scores if s.name != truth)
    else:
        assert res.best in {truth} | NESTED_IN[truth]
        if res.best != truth:
            lo, _ = res.score(truth).gap_interval
            assert lo <= 0, f"{truth} should be within noise of {res.best}"


def test_the_verdict_reads_as_the_issue_asks(simulated):
    """DCM's log: a cascade-type model clearly ahead of PBM and UBM says users stop after a
    click; the PBM sample: PBM (or UBM, which nests it) best, the other within noise or not."""
    res = evaluate.compare(sessions_of(simulated("dcm", N), test_every=4), list(MODELS),
                           n_bootstrap=100, seed=3, refit_intervals=False)
    assert res.verdict.takeaway == ("cascade-type models fit far better: users stop after a "
                                    "click (DCM best).")
    assert res.verdict.level == "reliable" and not res.verdict.reasons
    res = evaluate.compare(sessions_of(simulated("pbm", N), test_every=4), ["pbm", "ubm"],
                           n_bootstrap=100, seed=3, refit_intervals=False)
    other = "UBM" if res.best == "pbm" else "PBM"
    best = "PBM" if res.best == "pbm" else "UBM"
    if res.verdict.level == "inconclusive":
        assert res.verdict.takeaway == f"{best} fits best; {other} is within noise of it."
        assert res.verdict.codes == ["within_noise"] and res.verdict.to_settle
    else:
        assert res.verdict.takeaway == f"{best} fits best."
