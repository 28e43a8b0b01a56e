import re

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


@pytest.mark.parametrize("value, kwargs, want", [
    (1150.3, {}, "1,150"),              # never "1.15e+03"
    (1.0484665, {}, "1.05"),
    (0.5, {}, "0.5"),
    (0.0000123, {}, "0.0000123"),       # never "1.23e-05"
    (1e-9, {"decimals": 2}, "0.0000000010"),  # a non-zero value never reads 0
    (0.0033, {"decimals": 2, "pct": True}, "0.33%"),
    (0.005, {"decimals": 2, "pct": True}, "0.50%"),  # one precision: 0.50%, not 0.5%
    (-0.0, {"decimals": 3, "sign": True}, "0.000"),
    (float("nan"), {}, ""),
    (None, {}, ""),
])
def test_plain_numbers_have_no_exponent_nan_or_none(value, kwargs, want):
    from ulr.text import plain
    assert plain(value, **kwargs) == want


def test_counts_words_and_one_precision_per_sentence():
    from ulr.text import count, fmt, words
    assert count(12000) == "12,000" and count(None) == "" and count(float("nan")) == ""
    assert count(52.94) == "52.9"
    assert words("held_out_sessions") == "held-out sessions"
    assert words("n_train_clicks") == "train clicks" and words("theta") == "theta"
    assert words("user-item affinity") == "user-item affinity"
    assert fmt(None) == "n/a" and fmt(0.01234, 0.0012) == "0.012"
    from ulr import verdict
    assert verdict.fmt is fmt  # the verdicts use the same formatter


# ---------------------------------------------------------------- visitor text (issue 55)


def shown(markdown: str) -> str:
    """What a Markdown renderer shows of ``literal``'s output: escapes read, zero-width
    spaces invisible."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u200b", "")


def test_literal_escapes_every_markdown_html_and_directive_construct():
    from ulr.text import literal
    hostile = ("**[x](http://evil.example)** ![i](http://e/i.png) <img src=x> www.e.com "
               ":red[r] :material/home: $x$ # h\n- item &amp; a@b.c `c` ~s~ _it_ snake_case")
    out = literal(hostile)
    assert "\n" not in out                         # one paragraph
    assert shown(out) == hostile.replace("\n", " ")  # the same characters, once read
    for i, ch in enumerate(out):                   # every markup character is escaped
        if ch in "*<>&`~$":
            assert out[i - 1] == "\\", (i, ch, out)
    # what a renderer finds after reading the escapes is broken by a zero-width space
    for live in ("http\u200b://", "www\u200b.", ":\u200bred", ":\u200bmaterial", "@\u200bb.c"):
        assert live in out.replace("\\", ""), live
    assert "\\_it\\_" in out and "snake_case" in out   # emphasis, not a word's underscore
    assert "](" not in out and "]\\(" in out            # no inline link or image
    assert literal("[-0.5, +0.2]") == "[-0.5, +0.2]"     # brackets alone make no link
    assert literal("# title") == "\\# title" and literal("1. one") == "1\\. one"
    assert literal("- item") == "\\- item" and literal("a - b 1. c") == "a - b 1. c"
    assert literal("plain words 12, ok.") == "plain words 12, ok."
    assert literal("a\\b") == "a\\\\b"           # a backslash stays a backslash


def test_clip_keeps_a_value_on_one_line_and_readable():
    from ulr.text import clip
    assert clip("short name") == "short name"
    assert clip("two\nlines\r\tend") == "two lines end"
    long = "x" * 60_000_000
    cut = clip(long)
    assert cut.startswith("x" * 79 + "…") and cut.endswith("(60,000,000 characters)")
    assert len(cut) < 120
    assert clip("abcdef", 4) == "abc… (6 characters)"


def test_literal_leaves_colons_that_make_nothing_as_typed():
    from ulr.text import literal
    assert literal("spark://127.0.0.1:7077 at 3:2") == "spark://127.0.0.1:7077 at 3:2"
