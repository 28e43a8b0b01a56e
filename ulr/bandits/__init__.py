"""Bandit lab: cascading bandits batched over runs, theory curves and replay evaluation.

- :mod:`~ulr.bandits.envs` -- environments (``kveton``, ``linear``, ``data``)
- :mod:`~ulr.bandits.policies` -- the algorithms, each batched over ``R`` runs
- :mod:`~ulr.bandits.simulate` -- :class:`BanditRuns` / :class:`BanditLab`,
  advanced in chunks (expected regret)
- :mod:`~ulr.bandits.run` -- :class:`~ulr.bandits.run.LabRun`, the lab's live run (start, pause, resume, done)
- :mod:`~ulr.bandits.bounds` -- UCB1 upper bound, Kveton et al. lower bound
- :mod:`~ulr.bandits.replay` -- replay evaluation on a randomized log (Li et al. 2011)
- :mod:`~ulr.bandits.plots` -- regret figures
"""

from ulr.bandits.envs import ENVIRONMENTS, CascadeEnv, make_env
from ulr.bandits.policies import ALGORITHMS, make_policy
from ulr.bandits.replay import ReplayResult, replay
from ulr.bandits.simulate import BanditLab, BanditRuns, simulate

__all__ = ["ALGORITHMS", "ENVIRONMENTS", "BanditLab", "BanditRuns", "CascadeEnv",
           "ReplayResult", "make_env", "make_policy", "replay", "simulate"]
