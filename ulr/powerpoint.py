"""``ulr.powerpoint`` is :mod:`ulr.report.powerpoint` (the .pptx deck), under its older name."""

import sys

from ulr.report import powerpoint

sys.modules[__name__] = powerpoint
