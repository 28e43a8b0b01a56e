"""CSV formula-injection neutralizer."""

import io

import pandas as pd

from ulr.export import neutralize, safe_csv_bytes


def reference(v):
    return "'" + v if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r") else v


def test_text_cells_neutralized_numbers_kept():
    df = pd.DataFrame({
        "text": ["=HYPERLINK(\"x\")", "+1", "-2", "@SUM(A1)", "plain", None],
        "mixed": [-1, 2.5, "=cmd|' /C calc'!A0", "-x", 7, "ok"],
        "num": [-1.0, -2.0, 3.0, 4.0, 5.0, 6.0],
        "=bad header": [1, 2, 3, 4, 5, 6],
    })
    out = neutralize(df)
    for col in ("text", "mixed"):
        def norm(v):
            return None if v is None or (isinstance(v, float) and pd.isna(v)) else v
        assert [norm(reference(v)) for v in df[col]] == [norm(v) for v in out[col]]
    assert out["num"].tolist() == df["num"].tolist()
    assert "'=bad header" in out.columns
    back = pd.read_csv(io.BytesIO(safe_csv_bytes(df)))
    assert back["num"].tolist() == [-1.0, -2.0, 3.0, 4.0, 5.0, 6.0]
    assert not any(str(v).startswith(("=", "+", "@")) for v in back["text"].dropna())


def test_a_formula_after_leading_whitespace_or_a_line_break_is_neutralized():
    """Spreadsheets skip leading spaces and line breaks before a formula (issue 55)."""
    cells = ["\n@SUM(1+1)", "  =1+1", "\t-2", "\r\n+3", "\u00a0=x", "a\n=b", "plain =x", " 1"]
    df = pd.DataFrame({"text": cells, "obj": pd.Series(cells, dtype=object),
                       "str": pd.Series(cells, dtype="string")})
    out = neutralize(df)
    want = ["'" + c for c in cells[:5]] + cells[5:]  # a formula only where a cell starts
    for col in ("text", "obj", "str"):
        assert out[col].tolist() == want, col
    assert "'\n=head" in neutralize(pd.DataFrame({"\n=head": [1]})).columns
