"""Options shared by the commands that read a click log."""

from __future__ import annotations

import argparse

from ulr.data import catalog, ingest

from ulr.data.log import Log

from ulr.data.mapping import FACTS, Mapping
from ulr.errors import UlrError
from ulr.text import MISSING, plain


def add_log_args(p, *, required: bool = True) -> None:
    """Add ``--input PATH [--map c=t ...]`` or ``--db PATH --name DATASET``."""
    g = p.add_argument_group("click log (either --input, or --db with --name)")
    g.add_argument("--input", metavar="PATH", help="CSV or Parquet click log")
    g.add_argument("--map", action="append", default=[], metavar="CANONICAL=THEIRS",
                   help="map a canonical column to the file's column (repeatable); "
                        "a+b builds a composite key from columns a and b")
    add_mapping_args(g)
    g.add_argument("--skip-bad-rows", action="store_true",
                   help="with --input: drop rows that break the schema instead of refusing")
    g.add_argument("--db", metavar="PATH", help="DuckDB file written by `load`")
    g.add_argument("--name", metavar="DATASET", help="stored dataset name")
    p.set_defaults(_log_required=required)


def add_mapping_args(p) -> None:
    """``--const``, ``--features`` and ``--fact``: the rest of a mapping (see Mapping)."""
    p.add_argument("--const", action="append", default=[], metavar="FIELD=VALUE",
                   help="give every row this value, e.g. randomized=1 (the whole log was "
                        "shown in random order) or propensity=0.2 (repeatable)")
    p.add_argument("--features", dest="feature_spec", metavar="NAMES", type=_column_patterns,
                   help="comma-separated numeric columns or glob patterns to store as "
                        "feature_* columns, e.g. 'user-item_affinity_*,price'")
    retire(p, "--feature-columns", "--features")
    p.add_argument("--fact", action="append", default=[], choices=list(FACTS),
                   help="declare a fact about the log: per_slot_propensity = the propensity "
                        "column is the probability of the item at its slot")


def _column_patterns(text: str) -> str:
    """``--features`` names columns; a bare number is the retired count of synthetic
    features (now ``--n-features``), refused rather than read as a column name."""
    if text.strip().isdigit():
        raise UlrError(f"--features names columns (a number of synthetic features is "
                       f"--n-features); got {text}.")
    return text


def mapping_from_args(args) -> Mapping:
    """The mapping that ``--map``, ``--const``, ``--features`` and ``--fact`` describe."""
    return mapping_from_cli(getattr(args, "map", []), getattr(args, "const", []),
                            getattr(args, "feature_spec", None), getattr(args, "fact", []))


def mapping_from_cli(maps=(), consts=(), features: str | None = None,
                     facts=()) -> Mapping:
    """From ``--map c=a[+b]``, ``--const c=v``, ``--features 'p1,p2'``, ``--fact f``."""
    m = parse_map_args(maps)
    c = {}
    for item in consts or []:
        if "=" not in item:
            raise UlrError(f"a constant is written field=value; got {item!r}.")
        k, v = item.split("=", 1)
        c[k.strip()] = v.strip()
    feats = tuple(f for f in (features or "").split(",") if f.strip())
    base = Mapping.coerce(m)
    return Mapping(columns=base.columns, constants=c, features=feats,
                          facts=tuple(facts or ()))


def parse_map_args(items) -> dict[str, str]:
    """Parse CLI ``--map canonical=theirs`` items into a dict."""
    mapping: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise UlrError(f"a column mapping is written canonical=theirs; got {item!r}.")
        canon, theirs = item.split("=", 1)
        canon, theirs = canon.strip(), theirs.strip()
        if not canon or not theirs:
            raise UlrError(f"a column mapping is written canonical=theirs; got {item!r}.")
        mapping[canon] = theirs
    return mapping


def mapping_warnings(log) -> tuple:
    """:func:`ulr.lists.mapping_warnings` of an opened log (the verdicts' mapping reasons)."""
    from ulr.lists import mapping_warnings as check
    return check(log)


def render_verdict(result: dict) -> str:
    """The verdict lines of a result: level and takeaway, then what would settle it."""
    v = result.get("verdict")
    if not v:
        return ""
    lines = [f"verdict: {v['level'].upper()}: {v['takeaway']}"]
    lines += [f"  because: {r['message']}" for r in v.get("reasons", [])
              if r["code"] not in result.get("warning_codes", [])]
    if v.get("to_settle"):
        lines.append(f"  to settle: {v['to_settle']}")
    return "\n".join(lines)


def readable(value) -> str:
    """A setting as printed: numbers to 3 significant digits, lists joined, None as "none"."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return plain(value, sig=3) or MISSING  # never an exponent
    if isinstance(value, (list, tuple)):
        return ", ".join(readable(v) for v in value)
    return str(value)


def _has_mapping_args(args) -> bool:
    return bool(getattr(args, "map", None) or getattr(args, "const", None)
                or getattr(args, "feature_spec", None) or getattr(args, "fact", None))


def has_log_args(args) -> bool:
    return bool(getattr(args, "input", None) or getattr(args, "name", None))


def log_from_args(args) -> Log:
    """Open the log the options name (a file, or a stored dataset)."""
    if args.input and (args.name or args.db):
        raise UlrError("give either --input, or --db with --name, not both.")
    if args.input:
        return ingest.open_file(args.input, mapping_from_args(args),
                               skip_bad_rows=args.skip_bad_rows)
    if _has_mapping_args(args):
        raise UlrError("--map, --const, --features and --fact go with --input (a stored "
                       "dataset is already mapped).")
    if not args.name:
        raise UlrError("name a click log: --input PATH, or --db PATH --name DATASET.")
    if not args.db:
        raise UlrError("--name needs --db PATH (the database written by `load`).")
    return catalog.open_dataset(args.name, _existing_db(args.db))


def _existing_db(path: str) -> str:
    from pathlib import Path
    if not Path(path).exists():
        raise UlrError(f"database {path} does not exist; create it with `python -m ulr load`.")
    return path


def parse_floats(text: str, what: str) -> list[float]:
    """Comma-separated numbers from an option such as ``--theta 1,0.5,0.33``."""
    from ulr.text import parse_numbers
    return parse_numbers(text, what=what)


class _Retired(argparse.Action):
    """An old spelling of an option: refused with one sentence naming the new one."""

    def __init__(self, option_strings, dest, *, use: str, **kwargs):
        self.use = use
        super().__init__(option_strings, dest, nargs="?", default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS)

    def __call__(self, parser, namespace, values, option_string=None):
        raise UlrError(f"{option_string} is now {self.use}.")


def retire(p, old: str, new: str) -> None:
    """Refuse the option ``old`` with ``error: OLD is now NEW.`` (docs/glossary.md).

    The old spelling is left out of ``--help``; it takes an optional value so that
    the refusal, not an argparse complaint about the value, is what the user reads.
    """
    p.add_argument(old, action=_Retired, use=new, dest=f"_retired_{old.strip('-')}")


def add_option(p, flag: str, *, retired: tuple[str, ...] = (), **kwargs):
    """``p.add_argument(flag, **kwargs)`` plus old spellings that are refused
    (:func:`retire`): each names ``flag`` in its one-line error."""
    action = p.add_argument(flag, **kwargs)
    for old in retired:
        retire(p, old, flag)
    return action
