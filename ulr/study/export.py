"""Files for LightGBM's and XGBoost's own debiasing, from a simulated click log.

A click log becomes two SVMlight training files with one query group per session (label =
click, features ``1:v 2:v ...``), the rows of a session in shown order:

- ``lightgbm.svm`` (LightGBM's LibSVM parser takes no ``qid:``) and beside it the two
  side files LightGBM loads with the same stem: ``lightgbm.svm.query`` (the size of every
  group, one per line) and ``lightgbm.svm.position`` (the 0-based shown position of every
  row), which ``lightgbm.Dataset("lightgbm.svm")`` reads as its ``group`` and ``position``
  (``lambdarank_position_bias_regularization`` then applies; LightGBM >= 4.1);
- ``xgboost.svm``, the same rows with ``qid:SESSION``, which
  ``xgboost.DMatrix("xgboost.svm?format=libsvm")`` reads as its query groups; with
  ``lambdarank_unbiased=True`` XGBoost takes a row's position from its order in its group.

``clicks.parquet`` is the log in ulr's canonical schema, to load on the Data page (or with
``python -m ulr load``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ulr.errors import UlrError
from ulr.study.labels import LabelledSet
from ulr.study.simulate import ClickLog


def export_click_log(log: ClickLog, train: LabelledSet, folder) -> dict:
    """Write ``lightgbm.svm`` (with ``.query`` and ``.position``), ``xgboost.svm`` and
    ``clicks.parquet`` into ``folder`` (created if needed); returns the file names and counts."""
    from sklearn.datasets import dump_svmlight_file

    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UlrError(f"cannot write to {folder}: {exc.strerror or exc}.") from None
    order = np.lexsort((log.position, log.session))
    sess = log.session[order]
    X = train.X[log.doc[order]]
    y = log.click[order].astype(np.int8)
    svm = folder / "lightgbm.svm"
    dump_svmlight_file(X, y, str(svm), zero_based=False)
    dump_svmlight_file(X, y, str(folder / "xgboost.svm"), zero_based=False, query_id=sess)
    edges = np.flatnonzero(np.diff(sess)) + 1
    sizes = np.diff(np.r_[0, edges, sess.size])
    np.savetxt(str(svm) + ".query", sizes, fmt="%d")
    np.savetxt(str(svm) + ".position", (log.position[order] - 1).astype(np.int64), fmt="%d")
    from ulr.simulate import write_log
    write_log(log.frame(train, features=True), str(folder / "clicks.parquet"))
    files = [svm.name, svm.name + ".query", svm.name + ".position", "xgboost.svm",
             "clicks.parquet"]
    return {"folder": str(folder), "files": files, "rows": int(len(log)),
            "groups": int(sizes.size)}


def export_zip(log: ClickLog, train: LabelledSet) -> bytes:
    """:func:`export_click_log`'s files in one zip archive (the page's download)."""
    import io
    import tempfile
    import zipfile
    with tempfile.TemporaryDirectory(prefix="ulr_study_export_") as tmp:
        info = export_click_log(log, train, tmp)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name in info["files"]:
                zf.write(Path(tmp) / name, arcname=name)
    return buf.getvalue()
