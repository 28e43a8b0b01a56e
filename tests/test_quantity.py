"""ulr.quantity: one record per number for a reader, one renderer per surface (issue 50;
docs/verdicts.md §2, "Rounding" and "One formatter")."""

import datetime as dt
import math

import numpy as np
import pandas as pd
import pytest

from ulr import theme
from ulr.export import safe_csv_bytes
from ulr.quantity import KINDS, Quantity, cell, json_numbers, setting, significant, timestamp
from ulr.text import file_slug


def test_a_difference_of_rates_reads_points_with_signed_ends():
    q = Quantity("points", 0.31, 0.17, 0.45)
    assert q.text() == "+31 points [+17, +45]"
    assert q.text(interval="to") == "+31 points (95% interval +17 to +45)"
    assert q.ends() == "+17 to +45 points"
    assert "%" not in q.text()


def test_an_end_that_rounds_to_zero_keeps_its_sign_and_first_digit():
    # issue 50: "-0.32% to 0.00%" although the upper end is +0.0034%
    q = Quantity("rate", -0.0016, -0.0032, 0.000034, signed=True)
    assert q.text() == "-0.16% [-0.32%, +0.003%]"
    p = Quantity("points", -0.0016, -0.0032, 0.000034)
    assert p.text() == "-0.16 points [-0.32, +0.003]"
    # exactly 0 reads unsigned, never -0.00 or +0.00
    assert Quantity("points", 0.0, -0.01, 0.01).number() == "0.0"
    assert Quantity("points", -0.0, -0.01, 0.01).number() == "0.0"


def test_one_quantity_one_precision_whatever_reads_it():
    # a card and a sentence render the same record: the same text
    q = Quantity("rate", 0.004237, se=0.00011)
    assert q.text() == q.text() == "0.42%"
    assert Quantity("rate", 0.0042).text() == "0.42%"  # no SE: 2 significant digits


@pytest.mark.parametrize("v, out", [(1058.2, "1,060"), (2.0, "2"), (0.0012345, "0.00123"),
                                    (123456.0, "123,000"), (0.5, "0.5"), (-1234.5, "-1,230")])
def test_significant_digits_never_an_exponent(v, out):
    assert significant(v) == out
    assert "e" not in significant(v)


def test_weights_settings_and_missing_values():
    assert Quantity("weight", 1058.2).text() == "1,060"  # not 1.06e+03
    assert Quantity("setting", 2.0).text() == "2"  # not 2.000000
    assert setting(True) == "yes" and setting(None) == "none" and setting(0.25) == "0.25"
    assert Quantity("rate", float("nan")).text() == "not available"
    assert Quantity("count", 12000).text() == "12,000"
    # rounded to the interval's SE (0.0097): 3 decimals
    assert Quantity("loglik", -0.231, -0.251, -0.213).text() == "-0.231 nats [-0.251, -0.213]"
    with pytest.raises(ValueError, match="kind"):
        Quantity("percent", 0.1)
    assert set(KINDS) >= {"rate", "points", "relative", "count", "ratio", "loglik", "weight",
                          "duration"}


@pytest.mark.parametrize("v, out", [
    (0.0008283834000000001, "0.0008283834"), (3.40294e-05, "0.0000340294"),
    (0.1 + 0.2, "0.3"), (-0.0002767224, "-0.0002767224"), (1.0, "1.0"), (7, 7),
    (True, "yes"), (False, "no"), (None, ""), (float("nan"), ""), (np.float64(0.5), "0.5"),
    ("=text", "=text"), (1e-12, "0.000000000001"),
])
def test_csv_cells_carry_no_float_noise(v, out):
    assert cell(v) == out


def test_csv_export_reads_as_cells_and_stays_safe():
    df = pd.DataFrame({"x": [0.0008283834000000001, 3.40294e-05, np.nan, -0.5],
                       "flag": [True, False, True, False], "text": ["=1+1", None, "ok", "-x"],
                       "n": [1, 2, 3, 4]})
    out = safe_csv_bytes(df).decode()
    assert out.splitlines() == ["x,flag,text,n", "0.0008283834,yes,'=1+1,1",
                                "0.0000340294,no,,2", ",yes,ok,3", "-0.5,no,'-x,4"]
    # every float keeps 10 significant digits: read back, it is the value to 1e-10
    back = pd.read_csv(__import__("io").StringIO(out))
    assert back["x"].iloc[0] == pytest.approx(0.0008283834000000001, rel=1e-9)


def test_json_settings_lose_their_noise_not_their_digits():
    got = json_numbers({"theta": [1.0, 0.391304347826087, 0.34782608695652173], "k": 3,
                        "nested": {"x": 0.1 + 0.2}})
    assert got == {"theta": [1.0, 0.3913043478, 0.347826087], "k": 3, "nested": {"x": 0.3}}


def test_timestamps_read_in_words_in_utc():
    assert timestamp("2026-12-01T19:16:41+00:00") == "1 December 2026, 19:16 UTC"
    assert timestamp(dt.datetime(2026, 12, 1, 20, 16, tzinfo=dt.timezone(dt.timedelta(hours=1)))
                     ) == "1 December 2026, 19:16 UTC"
    naive = dt.datetime(2026, 12, 1, 19, 16, 41)  # this machine's local time
    assert timestamp(naive) == timestamp(naive.astimezone().isoformat())
    assert "T19" not in timestamp(naive.isoformat()) and timestamp(None) == ""
    assert timestamp("not a date") == "not a date"


@pytest.mark.parametrize("title, n, out", [
    ("Off-policy estimates of the target policy and the combined ones", 40,
     "off-policy-estimates-of-the-target"),
    ("Several loggers: each logging policy’s estimate", 40,
     "several-loggers-each-logging-policy"),
    ("Short", 40, "short"), ("abc def", 7, "abc-def"), ("abc def", 6, "abc"),
    ("supercalifragilistic", 5, "super"),
])
def test_file_names_are_cut_between_words(title, n, out):
    got = file_slug(title, n)
    assert got == out and len(got) <= n
    assert all(w in title.lower().replace("’", " ").split() or len(title.split()) == 1
               or w in title.lower() for w in got.split("-"))


def test_tables_read_flags_as_yes_no_and_settings_as_given():
    df = pd.DataFrame({"eta": [0.0, 0.5, 2.0], "arp": [2.6131, 2.9, 3.0],
                       "thin": [True, False, True], "within noise": [None, True, False]})
    shown = theme.format_table(df)
    assert list(shown["eta"]) == ["0", "0.5", "2"]
    assert list(shown["thin"]) == ["yes", "no", "yes"]
    assert pd.isna(shown["within noise"].iloc[0])  # missing: left empty by the table's writer
    assert list(shown["within noise"].iloc[1:]) == ["yes", "no"]
    styler = theme.styled(df.assign(ctr=[0.0042, 0.01, np.nan], d=[-0.0003, 0.001, np.nan]),
                          rates=("ctr",), points=("d",))
    html = styler.to_html()
    assert "0.42%" in html and "+0.100 points" in html and "None" not in html
    assert "True" not in html and "nan" not in html.lower().replace("nan-", "")
    assert not math.isnan(df["arp"].iloc[0])


def test_a_table_row_reads_as_its_card():
    # issue 50: a card "IPW ARP 8 [4, 26]" beside a table whose lower bound read 3.5
    t = pd.DataFrame({"metric": ["arp"], "ipw": [8.1], "ipw lower": [3.5], "ipw upper": [26.0],
                      "delta": [-0.8], "delta lower": [-1.2], "delta upper": [-0.05]})
    html = theme.styled(t, groups=[("ipw", "ipw lower", "ipw upper"),
                                   ("delta", "delta lower", "delta upper")]).to_html()
    from ulr.verdict import fmt_interval
    assert fmt_interval(8.1, 3.5, 26.0) == "8 [4, 26]"
    for cell_text in (">8<", ">4<", ">26<", ">-0.8<", ">-1.2<", ">-0.1<"):
        assert cell_text in html, cell_text


def test_a_rate_row_reads_as_its_sentence():
    # the off-policy table's logging row reads as the verdict's "vs 0.47% for the logging
    # policy", the snips row as the card "1.2% [0.7%, 1.7%]"
    t = pd.DataFrame({"estimator": ["snips", "logging"], "value": [0.0116, 0.0047],
                      "lower": [0.007, 0.0029], "upper": [0.017, 0.0067]})
    html = theme.styled(t, rates=("value", "lower", "upper"), interval=("lower", "upper")
                        ).to_html()
    for cell_text in (">1.2%<", ">0.7%<", ">1.7%<", ">0.47%<", ">0.29%<", ">0.67%<"):
        assert cell_text in html, cell_text
    assert Quantity("rate", 0.0047, 0.0029, 0.0067).text() == "0.47% [0.29%, 0.67%]"
