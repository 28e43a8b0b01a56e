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


# Typed refusals: what the log lacks, and the canonical field a user maps or declares to
# fix it. Pages branch on the type (and link to the control), never on the message text.


class NeedsRandomizedRows(UlrError):
    """The method needs rows shown in random order, and the log has none flagged.

    Fixed by mapping a ``randomized`` column, or by declaring that every list was
    shown in random order (the Data page's mapping; ``--const randomized=1``).
    """

    field = "randomized"


class NeedsSessions(UlrError):
    """The method needs to know which rows were shown together (a ``session_id``)."""

    field = "session_id"


class NeedsFeatures(UlrError):
    """The method learns on ``feature_*`` columns, and the log has none mapped."""

    field = "feature_*"


class Refused(UlrError):
    """Refused as asked; the call's keyword ``option`` (e.g. ``skip_bad_rows``,
    ``replace``) would let it proceed. The message says so in plain words and names no
    parameter: the CLI adds its flag, a page its control."""

    def __init__(self, message: str, *, option: str | None = None):
        super().__init__(message)
        self.option = option


class TooFewQueries(UlrError):
    """Too few queries remain (for a split, a paired test or a held-out set)."""

    field = "query_id"
