"""How a file's columns become the canonical schema: the mapping, column plans and facts.

A mapping says how a file's columns become the canonical schema
(:mod:`ulr.data.schema`). Besides one source column per field it can build a
field from several columns (a composite key), give a field one value for every
row (a constant), pick numeric columns as features by name or glob pattern, and
declare facts about the log that every page and command then uses. It is
stored with the dataset (the catalog's ``mapping`` JSON, see
:meth:`Mapping.stored`). :func:`plan_columns` decides the role and stored name
of every column of a file; :func:`derived_columns` writes the SQL of the fields
built from several columns or given as constants.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from ulr.data.schema import (CANONICAL, FEATURE_PREFIX, REQUIRED, STORE_TYPES, ColumnPlan,
                             preview_columns, auto_mapping, safe_ident, sanitize)
from ulr.errors import UlrError
from ulr.text import clip

COMPOSITE_FIELDS = ("query_id", "doc_id", "session_id")
CONSTANT_TYPES = {"randomized": bool, "propensity": float, "relevance": int}
FACTS = ("per_slot_propensity",)
KEY_SEPARATOR = "+"
_RESERVED = ("constants", "features", "facts")


def _parse_constant(field_name: str, value) -> bool | float | int:
    """A constant for ``field_name`` as its Python type, or UlrError."""
    kind = CONSTANT_TYPES.get(field_name)
    if kind is None:
        raise UlrError(f"a constant can be given for {', '.join(CONSTANT_TYPES)}, "
                       f"not for {field_name!r}.")
    text = str(value).strip().lower()
    if kind is bool:
        if isinstance(value, bool):
            return value
        if text in ("1", "true", "yes"):
            return True
        if text in ("0", "false", "no"):
            return False
        raise UlrError(f"the constant for {field_name!r} must be 1 or 0 (true or false), "
                       f"got {value!r}.")
    try:
        num = float(value)
    except (TypeError, ValueError):
        num = float("nan")
    if kind is float:
        if not 0.0 < num <= 1.0:
            raise UlrError(f"the constant for {field_name!r} must be a probability in (0, 1], "
                           f"got {value!r}.")
        return num
    if not (num == num and num >= 0 and num == int(num)):
        raise UlrError(f"the constant for {field_name!r} must be an integer >= 0, "
                       f"got {value!r}.")
    return int(num)


@dataclass(frozen=True)
class Mapping:
    """How a file's columns map onto the canonical schema (validated on creation).

    Parameters
    ----------
    columns : dict
        ``{canonical: (source, ...)}``; two or more sources make a composite
        key (``query_id``, ``doc_id`` or ``session_id`` only), stored as the
        sources' values joined by ``+``.
    constants : dict
        ``{canonical: value}`` for ``randomized`` (bool), ``propensity``
        (probability) or ``relevance`` (integer): every row gets the value.
    features : tuple of str
        Column names or glob patterns (``user-item_affinity_*``); each match
        is stored as ``feature_<name>``.
    facts : tuple of str
        Declared facts (:data:`FACTS`), e.g. ``per_slot_propensity``.
    """

    columns: dict = field(default_factory=dict)
    constants: dict = field(default_factory=dict)
    features: tuple = ()
    facts: tuple = ()

    def __post_init__(self):
        cols = {}
        for canon, parts in dict(self.columns).items():
            parts = (parts,) if isinstance(parts, str) else tuple(parts)
            if canon.startswith(FEATURE_PREFIX) and len(parts) == 1:
                cols[canon] = parts
                continue
            if canon not in CANONICAL:
                raise UlrError(f"unknown field {canon!r} in the mapping; the fields are "
                               f"{', '.join(CANONICAL)} and feature_*.")
            if not parts or any(not str(p).strip() for p in parts):
                raise UlrError(f"the mapping of {canon!r} names an empty column.")
            if len(parts) > 1 and canon not in COMPOSITE_FIELDS:
                raise UlrError(f"only {', '.join(COMPOSITE_FIELDS)} can be built from several "
                               f"columns, not {canon!r}.")
            cols[canon] = tuple(str(p) for p in parts)
        consts = {k: _parse_constant(k, v) for k, v in dict(self.constants).items()}
        both = sorted(set(cols) & set(consts))
        if both:
            raise UlrError(f"{both[0]!r} is mapped to a column and given a constant; "
                           "choose one.")
        feats = tuple(p.strip() for p in self.features if str(p).strip())
        unknown = [f for f in self.facts if f not in FACTS]
        if unknown:
            raise UlrError(f"unknown fact {unknown[0]!r}; known facts: {', '.join(FACTS)}.")
        object.__setattr__(self, "columns", cols)
        object.__setattr__(self, "constants", consts)
        object.__setattr__(self, "features", feats)
        object.__setattr__(self, "facts", tuple(sorted(set(self.facts))))

    # ---- construction
    @classmethod
    def coerce(cls, obj, columns: list[str] | None = None) -> "Mapping":
        """A Mapping from a Mapping, None, or a ``{canonical: source}`` dict.

        In a dict, ``"a+b"`` is a composite of columns ``a`` and ``b`` unless
        the file has a column named ``a+b`` (``columns``).
        """
        if isinstance(obj, Mapping):
            return obj
        obj = dict(obj or {})
        cols = {}
        for canon, src in obj.items():
            if canon in _RESERVED:
                continue
            src = str(src)
            if KEY_SEPARATOR in src and (columns is None or src not in columns):
                cols[canon] = tuple(s.strip() for s in src.split(KEY_SEPARATOR))
            else:
                cols[canon] = (src,)
        return cls(columns=cols, constants=obj.get("constants", {}),
                   features=tuple(obj.get("features", ())), facts=tuple(obj.get("facts", ())))

    # ---- checks against a file
    def is_plain(self) -> bool:
        """One source column per field, nothing derived (the original mapping kind)."""
        return (all(len(p) == 1 for p in self.columns.values()) and not self.constants
                and not self.features)

    def feature_columns(self, columns: list[str]) -> list[str]:
        """Source columns the feature names/patterns pick, in file order (UlrError if one
        picks nothing)."""
        picked: list[str] = []
        for pat in self.features:
            hits = [c for c in columns if fnmatch.fnmatchcase(c, pat)]
            if not hits:
                raise UlrError(f"the feature pattern {clip(pat)!r} matches no column of the file; "
                               f"the file has: {preview_columns(columns)}.")
            picked += [c for c in hits if c not in picked]
        return [c for c in columns if c in picked]

    def check(self, columns: list[str]) -> None:
        """Refuse (UlrError, one sentence) a mapping that names a column not in the file."""
        for canon, parts in self.columns.items():
            for src in parts:
                if src not in columns:
                    raise UlrError(f"column {clip(src)!r} mapped to {canon!r} is not in the file; "
                                   f"the file has: {preview_columns(columns)}.")
        self.feature_columns(columns)

    def stored(self, plans: list[ColumnPlan]) -> dict:
        """The mapping as stored in the catalog (JSON-ready).

        ``{canonical: source}`` for every field read from one column,
        ``{canonical: "a+b"}`` for a composite key, and, only when used,
        ``"constants": {field: value}``, ``"features": [patterns]`` and
        ``"facts": {...}`` (see :class:`LogFacts`).
        """
        out = {pl.role: pl.source for pl in plans if pl.role in CANONICAL}
        for canon, parts in self.columns.items():
            if len(parts) > 1:
                out[canon] = KEY_SEPARATOR.join(parts)
        if self.constants:
            out["constants"] = dict(self.constants)
        if self.features:
            out["features"] = list(self.features)
        facts = {}
        if self.constants.get("randomized") is True:
            facts["randomized"] = True
        if "per_slot_propensity" in self.facts:
            facts["per_slot_propensity"] = True
        if len(self.columns.get("query_id", ())) > 1:
            facts["query_key"] = list(self.columns["query_id"])
        if facts:
            out["facts"] = facts
        return out


@dataclass(frozen=True)
class LogFacts:
    """Facts declared about a log when it was loaded; every page and command uses them.

    Attributes
    ----------
    randomized : every list of the log was shown in random order (declared
        with the constant ``randomized=1``).
    per_slot_propensity : the ``propensity`` column is the logging policy's
        probability of the item at its slot (position), not of the whole list.
    query_key : the columns the query key was built from, when the log has
        no query column ("" when it has one).
    """

    randomized: bool = False
    per_slot_propensity: bool = False
    query_key: tuple = ()

    @property
    def composite_query(self) -> bool:
        return len(self.query_key) > 1

    @classmethod
    def from_mapping(cls, mapping: dict | None) -> "LogFacts":
        f = dict((mapping or {}).get("facts") or {})
        return cls(randomized=bool(f.get("randomized", False)),
                   per_slot_propensity=bool(f.get("per_slot_propensity", False)),
                   query_key=tuple(f.get("query_key") or ()))

    def describe(self) -> list[str]:
        """The facts in plain words (empty when none was declared)."""
        out = []
        if self.randomized:
            out.append("the whole log was shown in random order (randomized)")
        if self.per_slot_propensity:
            out.append("propensities are per slot")
        if self.composite_query:
            out.append("the log has no query column; the query is "
                       + " + ".join(self.query_key))
        return out


def derived_columns(stored_mapping: dict, plans: list[ColumnPlan]) -> list[tuple[str, str, str]]:
    """SQL for the fields built from several columns or given as constants.

    Returns ``(stored name, SQL expression over the staged columns, source label)``
    triples. Identifiers are the plans' own allow-listed stored names; constant
    values were type-checked by :class:`Mapping` and are rendered from Python
    numbers/booleans only.
    """
    stored_of = {pl.source: pl.stored for pl in plans}
    out = []
    for canon in COMPOSITE_FIELDS:
        src = stored_mapping.get(canon)
        if not src or src in stored_of:
            continue
        parts = [safe_ident(stored_of[s]) for s in src.split(KEY_SEPARATOR)]
        expr = ("concat_ws('+', " + ", ".join(f'CAST("{p}" AS VARCHAR)' for p in parts) + ")")
        out.append((canon, f"CAST({expr} AS {STORE_TYPES[canon]})", src))
    for canon, value in (stored_mapping.get("constants") or {}).items():
        kind = CONSTANT_TYPES[canon]
        lit = ("true" if value else "false") if kind is bool else repr(kind(value))
        out.append((safe_ident(canon), f"CAST({lit} AS {STORE_TYPES[canon]})", f"={value}"))
    return out


def plan_columns(columns: list[str], mapping=None) -> list[ColumnPlan]:
    """Decide the role and stored name of every source column.

    ``mapping`` is a :class:`Mapping` or ``{canonical: source}``; canonical
    names not in it are auto-detected. ``feature_*`` canonical names and the
    mapping's feature patterns map features. Fields built from several
    columns or given as constants are added at publication
    (:func:`derived_columns`); their source columns are kept as extras.
    """
    m = Mapping.coerce(mapping, columns)
    m.check(columns)
    single = {c: p[0] for c, p in m.columns.items() if len(p) == 1}
    derived = {c for c, p in m.columns.items() if len(p) > 1} | set(m.constants)
    if len(set(single.values())) != len(single):
        raise UlrError("the mapping uses one source column for two canonical columns.")
    feature_src = [c for c in m.feature_columns(columns) if c not in single.values()]
    parts = {s for c, p in m.columns.items() if len(p) > 1 for s in p}
    skip = set(single.values()) | set(feature_src) | parts
    auto = auto_mapping([c for c in columns if c not in skip])
    full = {**{k: v for k, v in auto.items() if k not in single and k not in derived}, **single}
    missing = [c for c in REQUIRED if c not in full and c not in derived]
    if missing:
        raise UlrError(
            f"missing required column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(x) for x in missing)}; the file has: {preview_columns(columns)}; "
            f"map {'them' if len(missing) > 1 else 'it'} to a column of the file.")
    by_source = {src: canon for canon, src in full.items()}
    plans: list[ColumnPlan] = []
    taken: set[str] = set(c for c in full if not c.startswith(FEATURE_PREFIX)) | derived
    for col in columns:
        canon = by_source.get(col)
        if canon is not None and not canon.startswith(FEATURE_PREFIX):
            plans.append(ColumnPlan(col, canon, canon))
            continue
        if canon is not None:  # explicit feature mapping
            base, role = sanitize(canon), "feature"
        elif col in feature_src:
            base, role = sanitize(col), "feature"
            if not base.startswith(FEATURE_PREFIX):
                base = FEATURE_PREFIX + base
        elif col.lower().startswith(FEATURE_PREFIX):
            base, role = sanitize(col), "feature"
        else:
            base, role = sanitize(col), "extra"
            if base.startswith(FEATURE_PREFIX) or base in CANONICAL:
                base = "x_" + base
        stored, i = base[:60], 2
        while stored in taken:
            stored = f"{base[:56]}_{i}"
            i += 1
        taken.add(stored)
        plans.append(ColumnPlan(col, safe_ident(stored), role))
    return plans
