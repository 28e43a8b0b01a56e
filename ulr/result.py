"""The one protocol every result of ulr follows (docs/verdicts.md §6).

A result is what a question's builder returns (:func:`ulr.propensity.estimate`,
:func:`ulr.rankers.train_and_evaluate`, :func:`ulr.ope.evaluate_log`, ...). Whatever it answers,
every surface reads it through the same five members:

- ``verdict``: the :class:`ulr.verdict.Verdict`, how strongly the evidence supports the
  answer;
- ``evidence``: ``{what: count}``, the units the verdict rests on ("sessions",
  "test queries", "accepted sessions", ...), each one field of the result, so a count
  shown in a verdict, a caveat and a tile is one number;
- :meth:`Result.quantities`: ``{name: Quantity}``, the numbers a reader sees, typed
  (:mod:`ulr.quantity`), so that one renderer per surface writes them;
- :meth:`Result.tables`: ``{name: DataFrame}``, the tables a page, a report and an export
  show;
- :meth:`Result.to_dict`: everything above as plain JSON (the ``--json`` output), with the
  verdict under ``"verdict"``.

A result is built once, by its builder. Its verdict, evidence and caveats are pure
functions of its fields, computed on first read (:func:`functools.cached_property`) and
never set afterwards: nothing writes into a frozen result, and a changed input (for
example :func:`dataclasses.replace` with the dataset's ``misfit``) is a new result with
its own verdict. A page never builds or amends one (``tests/test_pages_build_no_verdict.py``).
"""

from __future__ import annotations

from functools import cached_property  # noqa: F401  (the results' computed members)

#: every result type, in the order its module was imported (filled by
#: :meth:`Result.__init_subclass__`; ``tests/test_result_protocol.py`` builds each one)
RESULT_TYPES: list[type] = []


class Result:
    """Mix-in of every result type: the protocol's defaults and its registry.

    A result type defines ``verdict`` and ``evidence`` (fields or cached properties: the
    mix-in defines no attribute of those names, as a dataclass would take it for a
    field's default) and, where it has more to say, :meth:`quantities`, :meth:`tables`
    and :meth:`to_dict`; the defaults below read the verdict's estimate and the type's
    ``table()``.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        RESULT_TYPES.append(cls)

    def quantities(self) -> dict:
        """``{name: Quantity}``: by default the verdict's decisive quantity, named by its
        basis (``value`` or ``delta`` with its interval in the verdict's estimate)."""
        from ulr.quantity import Quantity
        v = getattr(self, "verdict", None)
        est = getattr(v, "estimate", None) or {}
        key = "delta" if "delta" in est else "value" if "value" in est else None
        if key is None or not isinstance(est.get(key), (int, float)):
            return {}
        kind = est.get("kind") if est.get("kind") in ("rate", "points", "relative", "ratio",
                                                       "loglik", "count") else "number"
        return {v.basis: Quantity(kind, est[key], est.get("lower"), est.get("upper"),
                                  level=float(est.get("level") or 0.95), about=v.basis,
                                  signed=key == "delta")}

    def tables(self) -> dict:
        """``{name: DataFrame}``: by default the type's ``table()``, if it has one."""
        t = getattr(self, "table", None)
        if callable(t):
            return {"table": t()}
        import pandas as pd
        return {"table": t} if isinstance(t, pd.DataFrame) else {}

    def to_dict(self) -> dict:  # overridden by every result with more to say
        v = getattr(self, "verdict", None)
        return {"verdict": None if v is None else v.to_dict(), "evidence": dict(getattr(self, "evidence", {}))}


def jsonable(obj):
    """``obj`` as plain JSON: numpy scalars and arrays as Python numbers and lists, a
    missing or non-finite number as ``None`` (JSON has no NaN), tuples as lists, and
    records with a ``to_dict`` as their dicts."""
    import math

    import numpy as np
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(float(obj)) else None
    if hasattr(obj, "to_dict") and not isinstance(obj, type):
        return jsonable(obj.to_dict())
    return obj
