"""The stakeholder lint: what no surface of ulr may show a reader (docs/verdicts.md §2).

:func:`problems` scans one text (a page's words, an export, a CLI answer) and returns one
line per finding: float noise (``0.0008283834000000001``), an exponent (``1.06e+03``),
``None``, ``nan``, a Python boolean, a Python identifier in prose (``held_out_sessions``),
an ISO timestamp (``2026-12-01T19:16:41``), a signed zero (``-0.00``, ``+0.0``), and a
difference of rates written in % (``+31% [+17%, +45%]``: percentage points read "points").
:func:`precision_problems` finds one rate shown at two precisions on one screen (a card
"0.4%" beside a sentence "0.42%").

Used by tests/test_stakeholder_lint.py (every page in AppTest, every report export, the
CLI) and by the browser journey of tests/e2e.
"""

from __future__ import annotations

import html
import re

#: the canonical fields of a mapping (the Data page and the audit name them as fields to
#: map) and the columns of the fixtures' own files: data, not internals
FIELDS = ("feature", "query_id", "doc_id", "session_id", "item_id", "user_id", "propensity_score",
          "per_slot_propensity", "target_prob", "random_order", "user_segment", "item_emb",
          "user_feature", "user_item_affinity", "feature_user_item_affinity")
_DATA_WORD = re.compile(r"^(?:%s)(?:_\d+|_\*)?$" % "|".join(map(re.escape, FIELDS)))

#: ulr's off-policy estimator codes (ulr.ope.registry, ulr.ope.slate), written out so the
#: checker imports nothing of what it checks
CODES = ("ips", "clipped-ips", "snips", "dr", "dm", "sndr", "switch-dr", "dros", "sg-ips",
         "sg-dr", "wips", "balanced-ips", "sips", "iips", "rips", "cascade-dr")

_MINUS = "\\-\u2212"  # escaped: a character class, not a range
RULES = {
    # a decimal with 13 or more digits, or a run of 6 zeros or nines after a digit that
    # is not 0 (0.0008283834000000001, 0.30000000000000004, 0.1999999)
    "float noise": re.compile(r"\d\.\d{13,}|\.\d*[1-9](?:0{6,}|9{6,})\d"),
    "exponent": re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][+\-]?\d+\b"),
    "None": re.compile(r"\bNone\b"),
    "nan": re.compile(r"(?<![\w-])(?:nan|NaN|NAN|inf|-inf|Infinity)(?![\w-])"),
    "Python boolean": re.compile(r"\b(?:True|False)\b(?! (?:discovery|positive|negative))"),
    "identifier": re.compile(r"(?<![\w/.\-=])[a-z][a-z0-9]*(?:_[a-z0-9*]+)+(?![\w(])(?!\.[a-z])"),
    # an off-policy estimator's code where its name belongs ("clipped-ips" for "clipped
    # IPS"): the codes are the CLI's and the JSON's, not a reader's
    "estimator code": re.compile(r"(?<![\w\-`'\"“])(?:%s)(?![\w\-])" % "|".join(
        sorted(CODES, key=len, reverse=True))),
    "ISO timestamp": re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?"),
    "signed zero": re.compile(rf"(?<![\w.])[+{_MINUS}]0(?:[.,]0+)?(?![\d.,]*[1-9])(?![\w])"),
    # "+31% [+17%, +45%]" or "the difference is +0.05%": a difference of two rates is in
    # percentage points
    "difference in %": re.compile(
        rf"[+{_MINUS}]\d[\d.,]*%\s*[\[(]\s*[+{_MINUS}]?\d[\d.,]*%"
        rf"|difference (?:is|of) [+{_MINUS}]\d[\d.,]*%"
        rf"|Difference[^.\n]{{0,20}}?[+{_MINUS}]\d[\d.,]*%"),
}


_QUOTED = ("= ", "“", "`", "'", '"')


def problems(text: str, where: str = "", *, allow=()) -> list[str]:
    """Every finding of :data:`RULES` in ``text``, as ``"where: rule 'context'"``.

    ``allow``: extra words (identifiers that are the user's own data, e.g. a column name)
    that are not findings.
    """
    text = str(text or "")
    allowed = set(allow)
    out = []
    for rule, rx in RULES.items():
        for m in rx.finditer(text):
            word = m.group(0)
            if rule == "identifier" and (_DATA_WORD.match(word) or word in allowed
                                         or text[:m.start()].endswith(_QUOTED)):
                continue  # data, or a name quoted as a name ("short name “local_auc”")
            ctx = text[max(0, m.start() - 60):m.end() + 40].replace("\n", " ")
            out.append(f"{where}: {rule} {word!r} in {ctx!r}")
    return out


_PCT = re.compile(r"(?<![\w.])(\d+(?:\.(\d+))?)%")


def precision_problems(cards, text: str, where: str = "") -> list[str]:
    """A rate shown on a card (``cards``: the cards' values, e.g. "0.4%") and again in
    ``text`` at another precision of the same number ("0.42%")."""
    out = []
    shown = [(m.group(1), len(m.group(2) or "")) for m in _PCT.finditer(text)]
    for card in cards:
        m = _PCT.fullmatch(str(card).strip())
        if not m:
            continue
        v, d = float(m.group(1)), len(m.group(2) or "")
        for s, ds in shown:
            if ds > d and round(float(s), d) == v and float(s) != v:
                out.append(f"{where}: one quantity two precisions: card {card!r} and "
                           f"{s}% in the text")
    return sorted(set(out))


def html_words(doc: str) -> str:
    """The words of an HTML document (scripts and styles left out)."""
    doc = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", doc)
    return html.unescape(re.sub(r"<[^>]+>", " ", doc))


def figure_words(fig: dict | None) -> str:
    """The words a chart shows: its title, axis titles and tick formats' output are not
    text, but trace names, annotations, legend and axis titles are."""
    if not fig:
        return ""
    out = []
    layout = fig.get("layout", {}) or {}

    def title(t):
        if isinstance(t, dict):
            return str(t.get("text", "") or "")
        return str(t or "")
    out.append(title(layout.get("title")))
    for k, v in layout.items():
        if (k.startswith("xaxis") or k.startswith("yaxis")) and isinstance(v, dict):
            out.append(title(v.get("title")))
            out += [str(t) for t in (v.get("ticktext") or [])]
    for a in layout.get("annotations", []) or []:
        out.append(str(a.get("text", "") or ""))
    for s in layout.get("shapes", []) or []:
        lab = (s.get("label") or {}).get("text") if isinstance(s, dict) else None
        if lab:
            out.append(str(lab))
    for tr in fig.get("data", []) or []:
        out.append(str(tr.get("name", "") or ""))
        t = tr.get("text")
        if isinstance(t, str):
            out.append(t)
        elif isinstance(t, list):
            out += [str(x) for x in t if isinstance(x, str)]
    return re.sub(r"<[^>]+>", " ", "\n".join(x for x in out if x))
