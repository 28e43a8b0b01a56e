"""Click models beyond the PBM, fitted on one aggregate and compared on held-out sessions.

One model per module: :mod:`pbm`, :mod:`cascade`, :mod:`dcm`, :mod:`dbn`,
:mod:`sdbn`, :mod:`ubm`, and the trust-bias model :mod:`trust` (offered, not in the
default comparison :data:`DEFAULT`), and SDBN by the book's counting estimate alone
(``sdbn-counts``, PyClick's SDBN) and DCM by counting (``dcm-counts``, PyClick's DCM), both
offered, not in the default. Every fitted model gives ``conditional``,
``marginal`` and ``examination`` probabilities on a
:class:`~ulr.clickmodels.sessions.Sessions`; :mod:`ulr.clickmodels.evaluate`
turns them into held-out log-likelihood, perplexity and the comparison.
Definitions: docs/clickmodels.md. Each model's name, label, class, kind and simulators
are its record in :mod:`ulr.clickmodels.records` (:class:`ClickModel`).
"""

from __future__ import annotations

from ulr.clickmodels.cascade import Cascade  # noqa: F401  (the classes, importable here)
from ulr.clickmodels.dbn import DBN  # noqa: F401
from ulr.clickmodels.dcm import DCM, DCMCounts  # noqa: F401
from ulr.clickmodels.pbm import PBM  # noqa: F401
from ulr.clickmodels.records import RECORDS, ClickModel
from ulr.clickmodels.sdbn import SDBN, SDBNCounts  # noqa: F401
from ulr.clickmodels.trust import Trust  # noqa: F401
from ulr.clickmodels.ubm import UBM  # noqa: F401

# derived views of the records (ulr.clickmodels.records), kept for their callers
MODELS = {name: r.cls for name, r in RECORDS.items()}
LABELS = {name: r.label for name, r in RECORDS.items()}
#: the models compared when none are named (the page's, the CLI's and the audit's default)
DEFAULT = tuple(name for name, r in RECORDS.items() if r.default)
CASCADE_TYPE = tuple(name for name, r in RECORDS.items() if r.cascade_type)


def parse_models(text) -> list[str]:
    """``"pbm,ubm"`` (or a list) -> validated model names, in the given order."""
    from ulr.errors import UlrError
    names = [t.strip().lower() for t in (text.split(",") if isinstance(text, str) else text)]
    names = [n for n in names if n]
    bad = [n for n in names if n not in MODELS]
    if bad:
        raise UlrError(f"unknown click model {bad[0]!r}; choose from {', '.join(MODELS)}.")
    if not names:
        raise UlrError("name at least one click model.")
    return list(dict.fromkeys(names))
