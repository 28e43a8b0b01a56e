"""Files for LightGBM's and XGBoost's own debiasing, from a simulated click log.

A click log becomes a LETOR / SVMlight training file with one query group per session
(label = click, ``qid:`` = session, features ``1:v 2:v ...``) and, beside it, the two
files LightGBM reads with the same stem (its "query" and "position" side files):

- ``train.svm.query``: the size of every group, one per line, in file order;
- ``train.svm.position``: the shown position of every row (0-based), one per line,
  which ``lightgbm.Dataset("train.svm")`` loads as its ``position`` field
  (``lambdarank_position_bias_regularization`` then applies).

XGBoost reads the same file (``xgboost.DMatrix("train.svm?format=libsvm")`` takes the
``qid:`` column as the query groups); with ``lambdarank_unbiased=True`` it takes a row's
position from its order in its group, which is why rows are written sorted by position
within each session. ``clicks.parquet`` is the log in ulr's canonical schema, to load
on the Data page (or with ``python -m ulr load``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ulr.errors import UlrError
from ulr.study.labels import LabelledSet
from ulr.study.simulate import ClickLog


def export_click_log(log: ClickLog, train: LabelledSet, folder) -> dict:
    """Write ``train.svm``, ``train.svm.query``, ``train.svm.position`` and
    ``clicks.parquet`` into ``folder`` (created if needed); returns the paths and counts."""
    from sklearn.datasets import dump_svmlight_file

    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UlrError(f"cannot write to {folder}: {exc.strerror or exc}.") from None
    order = np.lexsort((log.position, log.session))
    sess = log.session[order]
    X = train.X[log.doc[order]]
    svm = folder / "train.svm"
    dump_svmlight_file(X, log.click[order].astype(np.int8), str(svm), zero_based=False,
                       query_id=sess)
    edges = np.flatnonzero(np.diff(sess)) + 1
    sizes = np.diff(np.r_[0, edges, sess.size])
    np.savetxt(str(svm) + ".query", sizes, fmt="%d")
    np.savetxt(str(svm) + ".position", (log.position[order] - 1).astype(np.int64), fmt="%d")
    from ulr.simulate import write_log
    write_log(log.frame(train, features=True), str(folder / "clicks.parquet"))
    files = [svm.name, svm.name + ".query", svm.name + ".position", "clicks.parquet"]
    return {"folder": str(folder), "files": files, "rows": int(len(log)),
            "groups": int(sizes.size)}
