"""The page's export (ulr.study.export.export_zip): the files LightGBM and XGBoost read for
their own debiasing, checked by loading them with the libraries themselves."""

import io
import zipfile

import numpy as np
import pytest

from tests.study.letor import linear_set
from ulr.study import simulate as S
from ulr.study.export import export_zip


@pytest.mark.filterwarnings("ignore:.*Text file input has been deprecated")
def test_the_zip_holds_files_lightgbm_and_xgboost_read_with_groups_and_positions(tmp_path):
    import lightgbm as lgb
    import xgboost as xgb
    train = linear_set(queries=12, docs=6, seed=1)
    prod = S.production_ranker(train, seed=0)
    log = S.simulate_clicks(train, prod.score(train.X), sessions=40, positions=4, seed=3)
    with zipfile.ZipFile(io.BytesIO(export_zip(log, train))) as zf:
        assert sorted(zf.namelist()) == sorted(
            ["lightgbm.svm", "lightgbm.svm.query", "lightgbm.svm.position", "xgboost.svm",
             "clicks.parquet"])
        zf.extractall(tmp_path)
    # the slow, obvious reference: sessions in order, rows in shown order
    order = sorted(range(len(log)), key=lambda i: (log.session[i], log.position[i]))
    ds = lgb.Dataset(str(tmp_path / "lightgbm.svm"), params={"verbose": -1}).construct()
    np.testing.assert_array_equal(ds.get_label(), log.click[order])
    np.testing.assert_array_equal(ds.get_position(), log.position[order] - 1)
    np.testing.assert_array_equal(np.diff(ds.get_field("group")),
                                  np.bincount(log.session)[np.unique(log.session)])
    d = xgb.DMatrix(str(tmp_path / "xgboost.svm") + "?format=libsvm")
    np.testing.assert_array_equal(d.get_label(), log.click[order])
    np.testing.assert_array_equal(np.diff(d.get_uint_info("group_ptr")),
                                  np.bincount(log.session)[np.unique(log.session)])
