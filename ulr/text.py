"""Text in and out: parsing what the user types, and the one number formatter.

Shared by the CLI, the pages and every export."""

from __future__ import annotations

import math
import re

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


# --------------------------------------------------------------------------- numbers and words
#
# The one number formatter of ulr: every surface (page, slide, PDF, PowerPoint, HTML
# report, the ZIP's index) writes numbers through these functions, so a number never
# reads "1.15e+03", "nan" or "None", and a column or a sentence keeps one precision.

#: what a value that is not there reads as, where it cannot simply be left out
MISSING = "not available"


def missing(v) -> bool:
    """True for ``None``, NaN, ±inf and pandas' NA (a number that is not there)."""
    if v is None:
        return True
    try:
        return not math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def plain(v, decimals: int | None = None, *, sig: int = 3, pct: bool = False,
          sign: bool = False) -> str:
    """``v`` in positional notation, never with an exponent.

    With ``decimals``, exactly that many; otherwise ``sig`` significant digits
    without trailing zeros (1.0484665 → "1.05", 1150.3 → "1,150", 0.5 → "0.5",
    0.0000123 → "0.0000123"). Thousands are
    separated by commas; ``pct`` multiplies by 100 and appends "%". A missing value
    (``None``, NaN) gives "" (callers leave it out).
    """
    if missing(v):
        return ""
    f = float(v) * (100.0 if pct else 1.0)
    trim = decimals is None
    if decimals is None:
        decimals = 0 if f == 0 else max(0, sig - 1 - math.floor(math.log10(abs(f))))
    decimals = int(min(decimals, 12))
    if f != 0 and round(f, decimals) == 0:  # never show a non-zero value as 0: 2 digits
        decimals = min(12, -math.floor(math.log10(abs(f))) + (1 if not trim else sig - 1))
    s = f"{f:{'+' if sign else ''},.{decimals}f}"
    if trim and "." in s:  # significant digits read like %g: 0.5, 1, 0.33
        s = s.rstrip("0").rstrip(".")
    if s.lstrip("+-").replace("0", "").replace(".", "").replace(",", "") == "":
        s = f"{0.0:.{decimals}f}"  # -0.00 and +0.00 read as 0.00
    return s + ("%" if pct else "")


def count(v) -> str:
    """A count as people read it: 12,000; a non-integer to 3 significant digits; a missing
    count gives ""."""
    if missing(v):
        return ""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{int(f):,}" if f.is_integer() else plain(f)


def se_decimals(se, *, most: int = 6) -> int:
    """Decimals a standard error supports: down to its leading digit.

    ``se = 0.0012`` gives 3 (0.014), ``se = 2.3`` gives 0 (21). An unknown or
    zero standard error gives ``most``.
    """
    if missing(se) or float(se) <= 0:
        return most
    return int(min(most, max(0, -math.floor(math.log10(float(se))))))


def fmt(value, se=None, *, pct: bool = False, sign: bool = False) -> str:
    """``value`` rounded to what ``se`` supports; in % when ``pct``; "n/a" when missing.

    A value that is not 0 but rounds to 0 keeps digits down to its first significant
    one (an interval's upper end +0.0034% reads "+0.003%", not "0.00%"); exactly 0 reads
    unsigned.
    """
    if missing(value):
        return "n/a"
    scale = 100.0 if pct else 1.0
    d = se_decimals(None if se is None else float(se) * scale)
    f = float(value) * scale
    if f != 0 and round(f, d) == 0:  # a value that is not 0 never reads as 0 (nor -0):
        d = min(12, -math.floor(math.log10(abs(f))))  # down to its first significant digit
    s = f"{f:{'+' if sign else ''}.{d}f}"
    if s.lstrip("+-").strip("0.") == "":  # exactly 0 reads 0, never -0.000 or +0.000
        s = f"{0.0:.{d}f}"
    return s + ("%" if pct else "")


def words(name) -> str:
    """A field name as words: ``held_out_sessions`` → "held-out sessions",
    ``n_train_clicks`` → "train clicks"; text that is not an identifier is kept."""
    s = str(name)
    if not s.isidentifier() or "_" not in s:
        return s
    parts = [p for p in s.split("_") if p]
    if len(parts) > 1 and parts[0] == "n":
        parts = parts[1:]
    out = " ".join(parts)
    return out.replace("held out", "held-out")


# --------------------------------------------------------------------------- visitor text
#
# Text a visitor controls (link parameters, dataset, report and source names, column names,
# cell values, file names, and ulr's own messages that echo them) is shown as text on every
# surface: the pages pass it through :func:`literal` before Streamlit renders Markdown, and
# ulr cuts a value it echoes in a sentence with :func:`clip`.

#: the most characters of one value a sentence echoes; a longer value is cut with "…"
ECHO_MAX = 80

# What starts Markdown or HTML anywhere in a line: backslash-escaped everywhere. ``_`` only
# where it can start or end emphasis (not inside a word: ``session_id`` stays as written);
# ``(`` only right after ``]`` (an inline link or image: brackets alone make none, as no
# page defines a link reference, and ``[-0.5, +0.2]`` reads as written); ``#``, ``>``,
# ``-``, ``+``, ``=``, ``|`` and a number's ``.`` or ``)`` only where they would start a
# block (the first character).
_MARKUP = frozenset("\\`*<>&~$")
_LEAD = re.compile(r"^(\s*)(?:([#>+=|*-])|(\d+)([.)]))")
_LONE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_BREAKS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")
# GitHub's autolinks (``www.x``, ``http://x``, ``a@b.c``), emoji shortcodes (``:smile:``) and
# Streamlit's icons (``:material/home:``) are found in the text after the escapes are read,
# so a backslash does not stop them: a zero-width space does (after "www", after a scheme
# GitHub links, after the colon of ``:name:`` or ``:color[``, after the "@" of an address);
# it shows as nothing. Other colons (``spark://h:7077``) are left as typed.
_AUTOLINK = re.compile(r"(?i)(\bwww(?=\.)|(?:(?<=https)|(?<=http)|(?<=ftp)|(?<=mailto)|"
                       r"(?<=xmpp))(?=:)|:(?=[a-z0-9_+/-]+:|[a-z]+\[)|@(?=[-\w]+\.[-\w]))")
_ZWSP = "\u200b"


def clip(value, limit: int = ECHO_MAX) -> str:
    """``value`` as a sentence echoes it: on one line (line breaks and control characters
    read as one space), at most ``limit`` characters, a longer one cut and ended with "…"
    and its full length ("…" (60,000,000 characters))."""
    s = _BREAKS.sub(" ", str(value))
    if len(s) <= limit:
        return s
    return f"{s[:max(1, limit - 1)]}… ({len(s):,} characters)"


def literal(text) -> str:
    """``text`` as Markdown that shows exactly its characters: no link, image, HTML,
    emphasis, heading, list, LaTeX or Streamlit directive survives.

    Every page message that includes text a visitor controls passes that text (or the
    whole message, when it is one of ulr's plain-text sentences) through this function
    before ``st.markdown``, ``st.warning``, ``st.error``, ``st.info``, ``st.caption``,
    ``st.subheader`` or a widget label renders it. Line breaks read as spaces (one message,
    one paragraph); a zero-width space breaks what would become a link, an emoji or an icon
    after the escapes are read (``www.``, ``http:``, ``:name:``, ``a@b.c``).
    """
    s = _AUTOLINK.sub(lambda m: m.group(0) + _ZWSP, _BREAKS.sub(" ", str(text)))
    s = "".join("\\" + ch if ch in _MARKUP else ch for ch in s)
    s = _LONE_UNDERSCORE.sub(r"\\_", s).replace("](", "]\\(")
    return _LEAD.sub(lambda m: m.group(1) + ("\\" + m.group(2) if m.group(2)
                                             else m.group(3) + "\\" + m.group(4)), s, count=1)


def shown(value, limit: int = ECHO_MAX) -> str:
    """A visitor's value as a page message echoes it: :func:`clip` then :func:`literal`."""
    return literal(clip(value, limit))


def file_slug(text, n: int = 40) -> str:
    """``text`` as a file-name part: lower-case words joined by "-", at most ``n``
    characters, cut between words, never inside one ("" when no word fits or there is
    none; a first word longer than ``n`` is cut at ``n``)."""
    import re
    s = re.sub(r"['’]s\b", "", str(text).lower())  # "policy’s" → "policy", not "policy-s"
    s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")
    if len(s) <= n:
        return s
    cut = s[:n + 1]
    return (cut[:cut.rfind("-")] if "-" in cut else s[:n]).strip("-")
