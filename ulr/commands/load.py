"""``load`` and ``datasets``: store click logs in DuckDB and list them."""

from __future__ import annotations

import sys
from pathlib import Path

from ulr.data import catalog, ingest

from ulr.data.log import OPERATOR
from ulr.commands import common
from ulr.errors import UlrError

ORDER = 20


def register(sub):
    p = sub.add_parser("load", help="validate a click log and store it in DuckDB")
    p.add_argument("path", help="CSV or Parquet file")
    p.add_argument("--db", required=True, help="DuckDB file (created if missing)")
    p.add_argument("--name", required=True, help="dataset name")
    p.add_argument("--map", action="append", default=[], metavar="CANONICAL=THEIRS",
                   help="map a canonical column to the file's column (repeatable); "
                        "query_id=a+b builds a composite key from columns a and b")
    common.add_mapping_args(p)
    p.add_argument("--skip-bad-rows", action="store_true",
                   help="store the valid rows and keep the bad ones for download")
    p.add_argument("--replace", action="store_true", help="replace a dataset of the same name")
    p.add_argument("--rejected-out", metavar="PATH",
                   help="write the skipped rows to this CSV")
    p.set_defaults(run=run_load)

    d = sub.add_parser("datasets", help="list stored datasets (or delete or rename one)")
    d.add_argument("--db", required=True)
    d.add_argument("--delete", metavar="NAME",
                   help="delete this dataset (the command line acts as the operator: any "
                        "dataset, including those loaded in the dashboard)")
    d.add_argument("--rename", nargs=2, metavar=("OLD", "NEW"),
                   help="rename a dataset (as the operator: any dataset)")
    d.set_defaults(run=run_datasets)


def run_load(args) -> dict:
    mapping = common.mapping_from_args(args)
    res = ingest.load_log(args.path, args.name, db_path=args.db, mapping=mapping,
                         skip_bad_rows=args.skip_bad_rows, replace=args.replace)
    out = {"dataset": res.dataset, "rows": res.rows, "rejected": res.rejected,
           "mapping": res.info.mapping, "content_hash": res.info.content_hash,
           "facts": res.info.facts.describe(),
           "warnings": [w.to_dict() for w in res.warnings]}
    for w in res.warnings:  # one line each, also beside --json (docs/contract.md §2)
        sys.stderr.write(f"warning: {w.message}\n")
    if args.rejected_out and res.rejected:
        from ulr.export import safe_csv_bytes
        Path(args.rejected_out).write_bytes(safe_csv_bytes(res.rejected_rows))
        out["rejected_path"] = args.rejected_out
    return out


def run_datasets(args) -> dict:
    if not Path(args.db).exists():
        raise UlrError(f"database {args.db} does not exist; create it with `python -m ulr load`.")
    cur = catalog.cursor(args.db)
    out = {}
    if args.delete is not None:
        catalog.delete_dataset(cur, args.delete, actor=OPERATOR)
        out["deleted"] = args.delete
    if args.rename is not None:
        catalog.rename_dataset(cur, *args.rename, actor=OPERATOR)
        out["renamed"] = list(args.rename)
    out["datasets"] = [{"name": d.name, "rows": d.rows, "file_name": d.source,
                        "loaded_at": str(d.loaded_at), "rejected": d.rejected, "owner": d.owner}
                       for d in catalog.list_datasets(cur)]
    return out


def render(result: dict) -> str:
    if "datasets" in result:
        head = f"deleted {result['deleted']!r}\n" if "deleted" in result else ""
        if "renamed" in result:
            head += f"renamed {result['renamed'][0]!r} to {result['renamed'][1]!r}\n"
        if not result["datasets"]:
            return head + "no datasets stored"
        return head + "\n".join(f"{d['name']}\t{d['rows']} rows\t{d['file_name']}\t"
                                f"loaded by {_who(d['owner'])}" for d in result["datasets"])
    s = f"stored {result['dataset']!r}: {result['rows']} rows"
    if result["rejected"]:
        s += f", {result['rejected']} bad rows skipped"
    if result.get("facts"):
        s += "\ndeclared: " + "; ".join(result["facts"])
    return s  # the mapping warnings went to stderr, one `warning:` line each


def _who(owner) -> str:
    if owner is None:
        return "nobody recorded (before owners)"
    if owner == OPERATOR:
        return "the operator"
    return "a signed-in user" if owner.startswith("oidc:") else "a browser"
