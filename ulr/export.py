"""Safe exports.

Spreadsheet programs execute cells that start with ``=``, ``+``, ``-`` or
``@`` (CSV formula injection). Every CSV the product writes passes through
:func:`neutralize` first: such text cells get a leading apostrophe. Numbers
are left alone (a negative number is not text).
"""

from __future__ import annotations

import pandas as pd

_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def neutralize(df: pd.DataFrame) -> pd.DataFrame:
    """Copy of ``df`` whose text cells and headers cannot run as formulas."""
    out = df.copy()
    for col in out.columns:
        s = out[col]
        if pd.api.types.is_string_dtype(s) and s.dtype != object:
            bad = s.str.startswith(_TRIGGERS).fillna(False).to_numpy(dtype=bool)
        elif s.dtype == object:  # mixed: only actual strings are at risk, not numbers
            bad = s.map(lambda v: isinstance(v, str) and v.startswith(_TRIGGERS)).to_numpy(
                dtype=bool)
        else:
            continue
        if bad.any():
            out[col] = s.astype(object).where(~bad, "'" + s.astype("string").fillna(""))
    out.columns = [("'" + str(c)) if str(c).startswith(_TRIGGERS) else c for c in out.columns]
    return out


def safe_csv_bytes(df: pd.DataFrame) -> bytes:
    """CSV bytes of ``df`` with formula-looking text cells neutralized."""
    return neutralize(df).to_csv(index=False).encode("utf-8")
