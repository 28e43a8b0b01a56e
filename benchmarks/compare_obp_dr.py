"""ulr's DR, SNDR, Switch-DR and DRos against Open Bandit Pipeline's own code (issue 28).

    python -m pip download --no-deps obp -d /tmp/obp      # a wheel only; obp is no requirement
    python benchmarks/compare_obp_dr.py /tmp/obp/obp-*.whl

Unpacks the wheel in a temporary folder and imports ``obp/ope/estimators.py``
alone (torch, which it imports but these estimators do not use, is stubbed;
``obp.ope.__init__``, which pulls in plots and policies, is skipped). Prints
both values for the same reward predictions and the largest difference
(0.4.1 on Python 3.11: 5.6e-17). The sub-Gaussian estimators came after 0.4.1.
"""
import sys
import tempfile
import types
import zipfile
from pathlib import Path
import numpy as np
torch = types.ModuleType("torch")
class _Any:
    def __getattr__(self, k): return _Any
torch.Tensor = type("Tensor", (), {})
torch.__getattr__ = lambda k: _Any
sys.modules["torch"] = torch
for m in ("matplotlib", "matplotlib.pyplot", "seaborn"):
    sys.modules[m] = types.ModuleType(m)
TMP = tempfile.mkdtemp()
zipfile.ZipFile(sys.argv[1]).extractall(TMP)
sys.path.insert(0, TMP)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import obp
ope_pkg = types.ModuleType("obp.ope"); ope_pkg.__path__ = [f"{TMP}/obp/ope"]
sys.modules["obp.ope"] = ope_pkg  # skip obp.ope.__init__ (plots, policies)
from obp.ope.estimators import SelfNormalizedDoublyRobust, SwitchDoublyRobust, DoublyRobustWithShrinkage, DoublyRobust
from ulr.ope import estimators as est
rng = np.random.default_rng(0)
n, A = 2000, 6
pi_b = rng.dirichlet(np.ones(A), n); pi_e = rng.dirichlet(np.ones(A) * 0.5, n)
action = np.array([rng.choice(A, p=p) for p in pi_b]); pscore = pi_b[np.arange(n), action]
reward = (rng.random(n) < 0.3).astype(float)
qhat = rng.uniform(0, 1, (n, A))
ad = pi_e[:, :, None]; q3 = qhat[:, :, None]; pos = np.zeros(n, dtype=int)
w = pi_e[np.arange(n), action] / pscore
ql = qhat[np.arange(n), action]; qt = np.sum(pi_e * qhat, axis=1)
kw = dict(reward=reward, action=action, pscore=pscore, action_dist=ad, estimated_rewards_by_reg_model=q3, position=pos)
worst = 0.0
def cmp(name, ours, theirs):
    global worst
    d = abs(float(ours) - float(theirs)); worst = max(worst, d)
    print(f"{name:24s} ulr {float(ours):.15f} obp {float(theirs):.15f} |diff| {d:.1e}")
cmp("dr", est.doubly_robust(reward, w, q_logged=ql, q_target=qt), DoublyRobust().estimate_policy_value(**kw))
cmp("sndr", est.sndr(reward, w, q_logged=ql, q_target=qt), SelfNormalizedDoublyRobust().estimate_policy_value(**kw))
for tau in (0.5, 1.0, 3.0, 10.0):
    cmp(f"switch-dr tau={tau}", est.switch_dr(reward, w, q_logged=ql, q_target=qt, tau=tau), SwitchDoublyRobust(tau=tau).estimate_policy_value(**kw))
for lam in (0.1, 1.0, 10.0, 100.0):
    cmp(f"dros lam={lam}", est.dros(reward, w, q_logged=ql, q_target=qt, lam=lam), DoublyRobustWithShrinkage(lambda_=lam).estimate_policy_value(**kw))
print("worst |diff|", worst)
