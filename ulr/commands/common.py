"""Options shared by the commands that read a click log."""

from __future__ import annotations

from ulr import schema, store
from ulr.errors import UlrError


def add_log_args(p, *, required: bool = True) -> None:
    """Add ``--input PATH [--map c=t ...]`` or ``--db PATH --name DATASET``."""
    g = p.add_argument_group("click log (either --input, or --db with --name)")
    g.add_argument("--input", metavar="PATH", help="CSV or Parquet click log")
    g.add_argument("--map", action="append", default=[], metavar="CANONICAL=THEIRS",
                   help="map a canonical column to the file's column (repeatable)")
    g.add_argument("--skip-bad-rows", action="store_true",
                   help="with --input: drop rows that break the schema instead of refusing")
    g.add_argument("--db", metavar="PATH", help="DuckDB file written by `load`")
    g.add_argument("--name", metavar="DATASET", help="stored dataset name")
    p.set_defaults(_log_required=required)


def has_log_args(args) -> bool:
    return bool(getattr(args, "input", None) or getattr(args, "name", None))


def log_from_args(args) -> store.Log:
    """Open the log the options name (a file, or a stored dataset)."""
    if args.input and (args.name or args.db):
        raise UlrError("give either --input, or --db with --name, not both.")
    if args.input:
        return store.open_file(args.input, schema.parse_map_args(args.map),
                               skip_bad_rows=args.skip_bad_rows)
    if args.map:
        raise UlrError("--map goes with --input (a stored dataset is already mapped).")
    if not args.name:
        raise UlrError("name a click log: --input PATH, or --db PATH --name DATASET.")
    if not args.db:
        raise UlrError("--name needs --db PATH (the database written by `load`).")
    return store.open_dataset(args.name, _existing_db(args.db))


def _existing_db(path: str) -> str:
    from pathlib import Path
    if not Path(path).exists():
        raise UlrError(f"database {path} does not exist; create it with `python -m ulr load`.")
    return path


def parse_floats(text: str, what: str) -> list[float]:
    """Comma-separated numbers from an option such as ``--theta 1,0.5,0.33``."""
    try:
        vals = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise UlrError(f"{what} must be comma-separated numbers, got {text!r}.") from None
    if not vals:
        raise UlrError(f"{what} is empty.")
    return vals
