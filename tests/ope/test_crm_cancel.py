"""CRM learning asks ``should_stop`` every gradient step."""

import pytest

from ulr.errors import Cancelled
from ulr.ope.study import crm_study


def test_learning_stops_on_the_first_check_after_the_request():
    calls = []

    def stop_after_3():
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(Cancelled):
        crm_study(None, rows=500, steps=50, n_bootstrap=100, should_stop=stop_after_3)
    assert len(calls) == 4
