import pytest

from ulr.errors import UlrError
from ulr.text import parse_numbers


def test_parse_numbers_accepts_commas_semicolons_and_spaces():
    assert parse_numbers(" 1, 0.5;0.25 ,", what="θ") == [1.0, 0.5, 0.25]
    assert parse_numbers("-2e-1", what="θ") == [-0.2]


@pytest.mark.parametrize("text, message", [
    ("1, x", "θ must be numbers separated by commas, e.g. 1, 0.5, 0.33; got '1, x'"),
    (" , ;", "θ is empty"),
])
def test_parse_numbers_names_what_is_wrong(text, message):
    with pytest.raises(UlrError) as exc:
        parse_numbers(text, what="θ")
    assert message in str(exc.value)
