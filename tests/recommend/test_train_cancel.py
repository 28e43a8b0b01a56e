"""MF training asks ``should_stop`` every epoch."""

import pytest

from ulr.errors import Cancelled
from ulr.recommend.data import simulate_mnar
from ulr.recommend.models import MFConfig, train


@pytest.mark.parametrize("model", ["naive-mf", "cause"])
def test_training_stops_on_the_first_check_after_the_request(model):
    calls = []

    def stop_after_3():
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(Cancelled):
        train(simulate_mnar(users=40, items=30, seed=1), model, MFConfig(epochs=20),
              should_stop=stop_after_3)
    assert len(calls) == 4
