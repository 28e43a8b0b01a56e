"""Safe exports.

Spreadsheet programs execute cells that start with ``=``, ``+``, ``-`` or
``@`` (CSV formula injection), also after leading spaces, tabs or line breaks, which
some of them skip. Every CSV the product writes passes through :func:`neutralize`
first: such text cells get a leading apostrophe. Numbers are left alone (a negative
number is not text).
"""

from __future__ import annotations

import re

import pandas as pd

# A formula's first character, after any whitespace (line breaks, tabs, no-break and
# zero-width spaces, a byte order mark), or a cell that starts with a tab or a return.
_FORMULA = re.compile(r"[\s\u00a0\u200b\ufeff]*[=+\-@]|[\t\r]")


def _risky(v) -> bool:
    return isinstance(v, str) and _FORMULA.match(v) is not None


def neutralize(df: pd.DataFrame) -> pd.DataFrame:
    """Copy of ``df`` whose text cells and headers cannot run as formulas."""
    out = df.copy()
    for col in out.columns:
        s = out[col]
        if pd.api.types.is_string_dtype(s) and s.dtype != object:
            bad = s.str.match(_FORMULA).fillna(False).to_numpy(dtype=bool)
        elif s.dtype == object:  # mixed: only actual strings are at risk, not numbers
            bad = s.map(_risky).to_numpy(dtype=bool)
        else:
            continue
        if bad.any():
            out[col] = s.astype(object).where(~bad, "'" + s.astype("string").fillna(""))
    out.columns = [("'" + str(c)) if _risky(str(c)) else c for c in out.columns]
    return out


def readable(df: pd.DataFrame) -> pd.DataFrame:
    """Copy of ``df`` whose cells read as a CSV cell should (:func:`ulr.quantity.cell`):
    floats to 10 significant digits in positional notation (no float noise, no exponent),
    booleans yes/no, missing values empty."""
    from ulr.quantity import cell
    out = df.copy()
    for col in out.columns:
        s = out[col]
        if pd.api.types.is_integer_dtype(s) and not pd.api.types.is_bool_dtype(s):
            continue  # whole numbers are written as they are
        if s.dtype == object or pd.api.types.is_float_dtype(s) or pd.api.types.is_bool_dtype(s):
            out[col] = pd.Series([cell(v) for v in s], index=s.index, dtype=object)
    return out


def safe_csv_bytes(df: pd.DataFrame) -> bytes:
    """CSV bytes of ``df`` with formula-looking text cells neutralized and every cell
    readable (:func:`readable`). Numbers stay numbers: a negative one is not neutralized."""
    return readable(neutralize(df)).to_csv(index=False).encode("utf-8")
