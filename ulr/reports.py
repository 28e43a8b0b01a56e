"""``ulr.reports`` is :mod:`ulr.report.saved` (the saved reports), under its older name."""

import sys

from ulr.report import saved

sys.modules[__name__] = saved
