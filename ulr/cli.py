"""Command line: ``python -m ulr COMMAND [options]`` (docs/contract.md §2).

Each command lives in ``ulr/commands/<name>.py`` and exposes
``register(subparsers)`` (which sets ``run`` as the parser default) and
optionally ``render(result) -> str``. ``run(args)`` returns a JSON-able dict.
With ``--json`` exactly one JSON object goes to stdout. A :class:`UlrError`
exits with status 2 and one ``error: ...`` line on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys


from ulr import __version__, commands
from ulr.errors import Refused, UlrError
from ulr.text import plain


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting."""

    def error(self, message):  # noqa: D102
        raise UlrError(f"{message} (see: python -m ulr {self.prog.split(' ', 1)[-1]} --help)"
                       if " " in self.prog else f"{message} (see: python -m ulr --help)")


# Commands whose module name differs from the command; others are ulr/commands/<name>.py.
_MODULE_OF = {"datasets": "load"}


def _command_modules(only: str | None = None):
    """Command modules: just the one ``only`` needs, or all (for help and unknown names)."""
    names = [i.name for i in pkgutil.iter_modules(commands.__path__)
             if not i.name.startswith("_") and i.name != "common"]
    if only is not None:
        mod = _MODULE_OF.get(only, only.replace("-", "_"))
        if mod in names:
            names = [mod]  # importing every command (sklearn, scipy) costs seconds
    mods = [importlib.import_module(f"ulr.commands.{n}") for n in names]
    return sorted(mods, key=lambda m: (getattr(m, "ORDER", 50), m.__name__))


def build_parser(argv=None) -> argparse.ArgumentParser:
    parser = _Parser(prog="ulr", description="Unbiased learning-to-rank workbench.")
    parser.add_argument("--version", action="version", version=f"ulr {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    renderers = {}
    first = next((a for a in (argv or []) if not a.startswith("-")), None)
    for mod in _command_modules(first):
        before = set(sub.choices)
        mod.register(sub)
        for name in set(sub.choices) - before:
            sub.choices[name].add_argument("--json", action="store_true",
                                           help="print one JSON object on stdout")
            renderers[name] = getattr(mod, "render", None)
    parser.set_defaults(_renderers=renderers)
    return parser


def _jsonable(obj):
    from ulr.result import jsonable  # the one conversion of a result to plain JSON
    return jsonable(obj)


def _default_render(result: dict) -> str:
    lines = []
    for k, v in result.items():
        if isinstance(v, float):
            v = plain(v, sig=6) or "not available"
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, float) for x in v):
            v = "[" + ", ".join(plain(x, sig=4) for x in v) + "]"
        lines.append(f"{k}: {v}")
    return "\n".join(lines)


# A refusal that an option would lift names the flag that sets it (the library's message
# names no parameter; a page names its control instead).
FLAG_OF = {"skip_bad_rows": "--skip-bad-rows", "replace": "--replace",
           "test_fraction": "--test-fraction"}


def cli_words(exc: UlrError) -> str:
    """The error on one line, with the flag that lifts a :class:`~ulr.errors.Refused`."""
    message = " ".join(str(exc).split())
    flag = FLAG_OF.get(getattr(exc, "option", None) or "")
    if isinstance(exc, Refused) and flag:
        message = f"{message.rstrip('.')} ({flag})."
    return message


def end_now(code: int) -> None:
    """End the process with ``code`` without the interpreter's teardown.

    Python's exit frees every object of every module it imported, with several full
    garbage collections over all of them: after an audit (pandas, numba, DuckDB,
    scikit-learn loaded) 1-2 s on this machine, after the answer was printed (issue 54).
    A command that wrote nothing has nothing to finish but this process's exit handlers
    (the spill folder's removal, the log handlers' flush), run here, and its output,
    flushed. Other Python threads still running (none in a command) keep the usual exit.
    """
    import atexit
    import os
    import threading
    if threading.active_count() > 1:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: the usual exit would not print either
            pass
    atexit._run_exitfuncs()
    os._exit(code)


def _interrupted(exc: Exception) -> bool:
    """DuckDB turns a KeyboardInterrupt raised during its query into its own error."""
    return (type(exc).__name__ == "InterruptException"
            or (isinstance(exc, RuntimeError) and str(exc).strip() == "Query interrupted"))


def main(argv=None, *, end_at_once: bool = False) -> int:
    """Run one command; return its exit status (0, 1 a bug, 2 a user error, 130 stopped).

    ``end_at_once`` (``python -m ulr`` only, never a caller that goes on running): a
    command that says it wrote nothing (its ``read_only(args)``, e.g. ``audit`` without
    ``--report``) ends the process as soon as its answer is printed (:func:`end_now`).
    """
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(argv)
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.print_help(sys.stderr)
            raise UlrError("no command given.")
        result = _jsonable(args.run(args))
        if args.json:
            sys.stdout.write(json.dumps(result) + "\n")
        else:
            render = args._renderers.get(args.command) or _default_render
            sys.stdout.write(render(result) + "\n")
        read_only = getattr(args, "read_only", None)
        if end_at_once and read_only is not None and read_only(args):
            end_now(0)
        return 0
    except UlrError as exc:
        msg = cli_words(exc)
        sys.stderr.write(f"error: {msg}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 130
    except Exception as exc:  # a bug: still one line, but a different status
        if _interrupted(exc):  # Ctrl-C or SIGTERM while DuckDB ran a query
            sys.stderr.write("error: interrupted\n")
            return 130
        sys.stderr.write(f"error: internal error ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:300]}); please report it\n")
        return 1
