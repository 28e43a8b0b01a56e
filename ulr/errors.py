"""User-facing errors.

A :class:`UlrError` is a problem with the user's input (a bad file, an unknown
dataset, an option out of range). Its message is one readable sentence. The CLI
turns it into exit status 2 and one ``error:`` line; the pages show it as an
error box. Anything else is a bug.
"""


class UlrError(Exception):
    """An error the user can fix; ``str(err)`` is the whole explanation."""
