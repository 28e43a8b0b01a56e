"""Click models beyond the PBM, fitted on one aggregate and compared on held-out sessions.

One model per module: :mod:`pbm`, :mod:`cascade`, :mod:`dcm`, :mod:`dbn`,
:mod:`sdbn`, :mod:`ubm`, and the trust-bias model :mod:`trust` (offered, not in the
default comparison :data:`DEFAULT`), and SDBN by the book's counting estimate alone
(``sdbn-counts``, PyClick's SDBN) and DCM by counting (``dcm-counts``, PyClick's DCM), both
offered, not in the default. Every fitted model gives ``conditional``,
``marginal`` and ``examination`` probabilities on a
:class:`~ulr.clickmodels.sessions.Sessions`; :mod:`ulr.clickmodels.evaluate`
turns them into held-out log-likelihood, perplexity and the comparison.
Definitions: docs/clickmodels.md.
"""

from __future__ import annotations

from ulr.clickmodels.cascade import Cascade
from ulr.clickmodels.dbn import DBN
from ulr.clickmodels.dcm import DCM, DCMCounts
from ulr.clickmodels.pbm import PBM
from ulr.clickmodels.sdbn import SDBN, SDBNCounts
from ulr.clickmodels.trust import Trust
from ulr.clickmodels.ubm import UBM

MODELS = {"pbm": PBM, "cascade": Cascade, "dcm": DCM, "dbn": DBN, "sdbn": SDBN, "ubm": UBM,
          "trust": Trust, "sdbn-counts": SDBNCounts, "dcm-counts": DCMCounts}
LABELS = {"pbm": "PBM", "cascade": "cascade", "dcm": "DCM", "dbn": "DBN", "sdbn": "SDBN",
          "ubm": "UBM", "trust": "trust bias", "sdbn-counts": "SDBN (counting)",
          "dcm-counts": "DCM (counting)"}
#: the models compared when none are named (the page's, the CLI's and the audit's default)
DEFAULT = ("pbm", "cascade", "dcm", "dbn", "sdbn", "ubm")
CASCADE_TYPE = ("cascade", "dcm", "dbn", "sdbn", "sdbn-counts", "dcm-counts")


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
