"""One rule for each option that several packages share: the confidence ``level``, the
bootstrap count ``n_bootstrap`` and the ``seed``, and keyword names that were renamed
(refused with the new name: :func:`retired`).

Every package checks these options here, so a value is accepted or refused the same way
by the position-bias estimators, the metrics, the ranker comparisons, off-policy
evaluation, the click models and the command line. A refusal is a :class:`BadOption`
(a :class:`~ulr.errors.UlrError`) whose ``option`` names the option as the caller
spells it (``n_bootstrap`` in Python, ``--bootstrap`` on the command line).
"""

from __future__ import annotations

import functools
import math
import numbers

from ulr.errors import UlrError

MAX_BOOTSTRAP = 10_000


class BadOption(UlrError):
    """An option outside its range; ``option`` is its name as the caller spells it."""

    option: str | None = None


def _refuse(option: str, message: str) -> BadOption:
    err = BadOption(message)
    err.option = option
    return err


def _whole(value, option: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise _refuse(option, f"{option} must be a whole number, got {value!r}.")
    return int(value)


def level(value, *, option: str = "level") -> float:
    """The two-sided confidence level: a number strictly between 0 and 1."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(value, bool) or not 0.0 < x < 1.0:
        raise _refuse(option, f"{option} must lie strictly between 0 and 1, got {value!r}.")
    return x


def n_bootstrap(value, *, option: str = "n_bootstrap", required: bool = False) -> int:
    """Bootstrap replicates: 0 (no interval) or 2 to :data:`MAX_BOOTSTRAP`.

    ``required``: the caller always draws an interval, so 0 is refused too.
    """
    n = _whole(value, option)
    if n == 0 and not required:
        return 0
    if not 2 <= n <= MAX_BOOTSTRAP:
        none = "" if required else "0 (no interval) or "
        raise _refuse(option, f"{option} must be {none}between 2 and {MAX_BOOTSTRAP:,}, "
                              f"got {value!r}.")
    return n


def seed(value, *, option: str = "seed") -> int:
    """A random seed: a whole number >= 0 (numpy's ``SeedSequence`` takes no negative)."""
    s = _whole(value, option)
    if s < 0:
        raise _refuse(option, f"{option} must be 0 or more, got {value!r}.")
    return s


def retired(**renames: str):
    """Refuse keywords that were renamed: ``@retired(draws="runs")`` makes a call with
    ``draws=`` raise ``TypeError: f() takes runs=, not draws= (renamed).`` (docs/glossary.md).

    The wrapped function keeps its signature (:func:`functools.wraps`), so the retired
    keyword appears nowhere in it; the names are kept in ``__retired__``.
    """
    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            for old in renames.keys() & kwargs.keys():
                raise TypeError(f"{fn.__name__}() takes {renames[old]}=, not {old}= (renamed).")
            return fn(*args, **kwargs)
        call.__retired__ = dict(renames)
        return call
    return wrap
