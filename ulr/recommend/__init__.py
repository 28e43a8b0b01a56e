"""Debiased recommendation from explicit ratings missing not at random (MNAR).

- :mod:`ulr.recommend.data` -- :func:`simulate_mnar`: true preferences, a logging
  policy whose exposure grows with the rating, a ~3% uniformly exposed slice,
  validation splits and a uniform test set.
- :mod:`ulr.recommend.models` -- naive MF, propensity-weighted MF (naive-Bayes
  propensities) and CausE, trained by mini-batch SGD with momentum.
- :mod:`ulr.recommend.experiment` -- :func:`run_experiment`: grids, the results
  table ("best on validation" vs "best on test") and figures; :func:`compare_seeds`:
  the experiments of several worlds with their verdict.
"""

from ulr.recommend.data import MNARData, Ratings, simulate_mnar
from ulr.recommend.experiment import (Experiment, SeedComparison, compare_seeds,
                                      learning_curves_figure, results_figure, results_table,
                                      run_experiment)
from ulr.recommend.models import MODELS, MFConfig, naive_bayes_propensity, train

__all__ = ["Experiment", "SeedComparison", "compare_seeds", "MFConfig", "MNARData", "MODELS", "Ratings", "learning_curves_figure",
           "naive_bayes_propensity", "results_figure", "results_table", "run_experiment",
           "simulate_mnar", "train"]
