"""Parsing of short text the user types (shared by the CLI and the pages)."""

from __future__ import annotations

from ulr.errors import UlrError


def parse_numbers(text: str, *, what: str, example: str = "1, 0.5, 0.33") -> list[float]:
    """Numbers separated by commas (or semicolons), e.g. ``"1, 0.5, 0.33"``.

    Raises :class:`UlrError` naming ``what`` (a flag on the CLI, the control's
    label on a page) when a part is not a number or nothing is given.
    """
    try:
        vals = [float(t) for t in str(text).replace(";", ",").split(",") if t.strip()]
    except ValueError:
        raise UlrError(f"{what} must be numbers separated by commas, e.g. {example}; "
                       f"got {text!r}.") from None
    if not vals:
        raise UlrError(f"{what} is empty: give numbers separated by commas, e.g. {example}.")
    return vals
