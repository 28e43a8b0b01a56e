"""``source``: register a Parquet/CSV lake or a Spark table and keep its aggregates current.

    python -m ulr source add NAME --path 'lake/*.parquet' [--engine spark]
    python -m ulr source add NAME --table db.clicks --engine spark [--spark-master URL]
    python -m ulr source refresh NAME
    python -m ulr source list
    python -m ulr source remove NAME

Then ``python -m ulr propensity --source NAME --method em`` estimates from the
stored statistics (docs/contract.md §2).
"""

from __future__ import annotations

from ulr.engines import sources

ORDER = 31


def register(sub):
    p = sub.add_parser("source", help="register a lake or Spark table; aggregate incrementally",
                       description="Register a Parquet/CSV path (file, folder, glob) or a Spark "
                                   "table; its statistics are stored per partition in the "
                                   "store's folder (<store>_files/sources/NAME) and refreshed "
                                   "incrementally.")
    p.add_argument("action", choices=("add", "refresh", "list", "remove"))
    p.add_argument("source", nargs="?", metavar="NAME")
    p.add_argument("--path", metavar="PATH_OR_GLOB")
    p.add_argument("--table", metavar="NAME", help="a table of Spark's catalog (--engine spark)")
    p.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb")
    p.add_argument("--spark-master", default="local[2]", metavar="URL")
    p.add_argument("--db", metavar="PATH", help="the store (default: data/ulr.duckdb or ULR_DB)")
    p.set_defaults(run=run)


def run(args) -> dict:
    from ulr.errors import UlrError
    if args.action == "list":
        return {"sources": sources.list_sources(args.db)}
    if not args.source:
        raise UlrError(f"source {args.action} needs a NAME.")
    if args.action == "add":
        return sources.add(args.source, path=args.path, table=args.table, engine=args.engine,
                           master=args.spark_master, db_path=args.db)
    if args.action == "remove":
        return sources.remove(args.source, db_path=args.db)
    return sources.refresh(args.source, db_path=args.db)


def render(result: dict) -> str:
    if "sources" in result:
        if not result["sources"]:
            return "no sources registered (add one: python -m ulr source add NAME --path ...)"
        return "\n".join(f"{s['name']}: {s['engine']} {s['path'] or s['tbl']} "
                         f"({s['partitions']} partitions, {s['rows']:,} rows, refreshed "
                         f"{s['refreshed_at']} UTC)" for s in result["sources"])
    if result.get("removed"):
        return f"{result['name']}: removed (its stored statistics are deleted; the rows stay)"
    return (f"{result['name']}: {result['partitions']} partitions ({result['scanned']} "
            f"aggregated now), {result['rows']:,} rows")
