"""One rule for each option that several packages share: the confidence ``level``, the
bootstrap count ``n_bootstrap`` and the ``seed``, and keyword names that were renamed
(refused with the new name: :func:`retired`).

A function declares the rules of its options once, at its definition, with :func:`params`
(in the spirit of scikit-learn's ``validate_params``, but small)::

    @validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap,
                     seed=validate.seed)
    def bootstrap_ci(metric, *, n_bootstrap=1000, level=0.95, seed=0): ...

Every call is then checked at entry, before any work, whether the option was passed by
keyword or by position (a default is checked once, by the test); a settings object (a frozen
dataclass, such as :class:`ulr.ope.settings.OPESettings`) declares its fields' rules the
same way. ``tests/test_validate.py`` finds every public function that takes ``level`` or
``n_bootstrap`` and requires the declaration.

Every package checks these options here, so a value is accepted or refused the same way
by the position-bias estimators, the metrics, the ranker comparisons, off-policy
evaluation, the click models and the command line. A refusal is a :class:`BadOption`
(a :class:`~ulr.errors.UlrError`) whose ``option`` names the option as the caller
spells it (``n_bootstrap`` in Python, ``--bootstrap`` on the command line).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import numbers

from ulr.errors import UlrError

MAX_BOOTSTRAP = 10_000


class BadOption(UlrError):
    """An option outside its range; ``option`` is its name as the caller spells it."""

    option: str | None = None


def refuse(option: str, message: str) -> BadOption:
    """The refusal of ``option`` with ``message`` (one sentence): raise what it returns."""
    err = BadOption(message)
    err.option = option
    return err


def _whole(value, option: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise refuse(option, f"{option} must be a whole number, got {value!r}.")
    return int(value)


def level(value, *, option: str = "level") -> float:
    """The two-sided confidence level: a number strictly between 0 and 1."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(value, bool) or not 0.0 < x < 1.0:
        raise refuse(option, f"{option} must lie strictly between 0 and 1, got {value!r}.")
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
        raise refuse(option, f"{option} must be {none}between 2 and {MAX_BOOTSTRAP:,}, "
                              f"got {value!r}.")
    return n


def required_bootstrap(value, *, option: str = "n_bootstrap") -> int:
    """Bootstrap replicates of a caller that always draws an interval: 2 to
    :data:`MAX_BOOTSTRAP` (:func:`n_bootstrap` with ``required=True``)."""
    return n_bootstrap(value, option=option, required=True)


def seed(value, *, option: str = "seed") -> int:
    """A random seed: a whole number >= 0 (numpy's ``SeedSequence`` takes no negative)."""
    s = _whole(value, option)
    if s < 0:
        raise refuse(option, f"{option} must be 0 or more, got {value!r}.")
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


def one_of(choices, *, what: str):
    """A rule: the value is one of ``choices`` (a collection, or a function returning one,
    read at each call so a registry may grow): ``unknown interval 'x'; choose from
    bootstrap, t.``"""
    def rule(value, *, option: str = what):
        allowed = choices() if callable(choices) else choices
        if not isinstance(value, str) or value not in allowed:
            raise refuse(option, f"unknown {what} {value!r}; choose from "
                                 f"{', '.join(allowed)}.")
        return value
    rule.__name__ = f"one_of_{what.replace(' ', '_')}"
    return rule


def params(**rules):
    """Declare the rules of a function's options: ``@params(level=level, seed=seed)``.

    Each rule is a function ``rule(value, *, option=name)`` that returns the value as the
    function will use it (``level`` a float, ``seed`` an int) or raises :class:`BadOption`
    naming the option (the sentence of the rule: ``level must lie strictly between 0 and 1,
    got 1.5.``). The wrapped function receives the returned values. A default is not
    checked per call (nor at import, which stays cheap); ``tests/test_validate.py`` checks
    every default once.

    On a dataclass (apply it above ``@dataclass``), the rules are those of its fields,
    checked when an instance is built (before its own ``__post_init__``, and again by
    :func:`dataclasses.replace`): the way a settings object validates itself.

    The wrapped function keeps its signature (:func:`functools.wraps`); the rules are kept
    in ``__params__``.
    """
    def wrap(obj):
        if isinstance(obj, type):
            return _checked_class(obj, rules)
        sig = inspect.signature(obj)
        unknown = sorted(set(rules) - set(sig.parameters))
        if unknown:
            raise TypeError(f"{obj.__qualname__}() has no parameter {', '.join(unknown)}")
        where = {}  # option -> its index among the positional parameters, or None
        names = list(sig.parameters)
        for name in rules:
            p = sig.parameters[name]
            where[name] = names.index(name) if p.kind in (p.POSITIONAL_ONLY,
                                                          p.POSITIONAL_OR_KEYWORD) else None
        checks = [(name, rule, where[name]) for name, rule in rules.items()]

        @functools.wraps(obj)
        def call(*args, **kwargs):
            for name, rule, i in checks:
                if name in kwargs:
                    kwargs[name] = rule(kwargs[name], option=name)
                elif i is not None and i < len(args):
                    args = (*args[:i], rule(args[i], option=name), *args[i + 1:])
            return obj(*args, **kwargs)
        call.__params__ = {**getattr(obj, "__params__", {}), **rules}
        return call
    return wrap


def _checked_class(cls, rules):
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"validate.params on a class needs a dataclass: put it above "
                        f"@dataclass on {cls.__qualname__}")
    unknown = sorted(set(rules) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise TypeError(f"{cls.__qualname__} has no field {', '.join(unknown)}")

    def check(self):
        for name, rule in rules.items():  # set through object: a settings object is frozen
            object.__setattr__(self, name, rule(getattr(self, name), option=name))

    post = getattr(cls, "__post_init__", None)
    if post is not None:  # the dataclass's __init__ calls it: check before its own work
        @functools.wraps(post)
        def __post_init__(self):
            check(self)
            post(self)
        cls.__post_init__ = __post_init__
    else:
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            init(self, *args, **kwargs)
            check(self)
        cls.__init__ = __init__
    cls.__params__ = {**getattr(cls, "__params__", {}), **rules}
    return cls


def settings_of(kind, settings, options: dict, *, caller: str):
    """``settings`` (an instance of the settings class ``kind``; ``None``: its defaults) with
    the keyword ``options`` applied, checked again: how a function that takes a settings
    object (``evaluate_log(log, settings, **options)``) still takes its options as keywords.
    An option ``kind`` lacks is a ``TypeError`` naming ``caller``, as Python's own."""
    unknown = sorted(set(options) - {f.name for f in dataclasses.fields(kind)})
    if unknown:
        raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
    if settings is None:
        return kind(**options)
    if not isinstance(settings, kind):
        raise TypeError(f"{caller}() takes its settings as a {kind.__name__}, not "
                        f"{type(settings).__name__}")
    return dataclasses.replace(settings, **options) if options else settings
