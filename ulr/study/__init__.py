"""Does debiasing help on my data? The semi-synthetic study on the analyst's labelled queries.

The protocol of Joachims, Swaminathan & Schnabel (WSDM 2017), used by ULTRA and most
unbiased learning-to-rank papers since:

1. take a labelled learning-to-rank set (:mod:`.labels`: LETOR / SVMlight, CSV, Parquet);
2. rank each query with a production ranker trained on a small labelled share;
3. simulate clicks on the true grades under a user model (:mod:`.simulate`);
4. train learners on the clicks (:mod:`.learners`: ulr's linear and boosted rankers,
   LightGBM and XGBoost with and without their position-bias corrections);
5. score them on held-out true grades, with intervals over runs and queries, and compare
   each with a baseline (:mod:`.run`).

:mod:`.export` writes a labelled set or a simulated log in the files LightGBM and XGBoost
read for their own debiasing.
"""

from ulr.study.labels import (LabelledSet, MalformedLine, read_labels, read_letor, read_table,
                              split_queries)
from ulr.study.learners import BASELINE, DEFAULT_LEARNERS, LEARNERS, parse_learners
from ulr.study.run import (METRICS, PRIMARY, Comparison, Interval, StudyResult, run_study,
                           two_way_interval)
from ulr.study.simulate import CLICK_MODELS, ClickLog, production_ranker, simulate_clicks

__all__ = ["BASELINE", "CLICK_MODELS", "ClickLog", "Comparison", "DEFAULT_LEARNERS",
           "Interval", "LEARNERS", "LabelledSet", "METRICS", "MalformedLine", "PRIMARY",
           "StudyResult", "parse_learners", "production_ranker", "read_labels", "read_letor",
           "read_table", "run_study", "simulate_clicks", "split_queries", "two_way_interval"]
