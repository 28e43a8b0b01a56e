"""User-facing errors.

A :class:`UlrError` is a problem with the user's input (a bad file, an unknown
dataset, an option out of range). Its message is one readable sentence. The CLI
turns it into exit status 2 and one ``error:`` line; the pages show it as an
error box. Anything else is a bug.
"""


class UlrError(Exception):
    """An error the user can fix; ``str(err)`` is the whole explanation."""


class Cancelled(Exception):
    """Work stopped because its caller asked it to (its ``should_stop()`` returned True).

    Not a :class:`UlrError`: nothing is wrong with the input, and a result cache must
    not keep it. Long loops take ``should_stop``, a keyword-only callable with no
    arguments, and call :func:`check` once per replicate, iteration, epoch or run.
    """


def check(should_stop) -> None:
    """Raise :class:`Cancelled` when ``should_stop`` (a callable, or None) says so."""
    if should_stop is not None and should_stop():
        raise Cancelled("stopped on request")
