"""``python -m ulr``: see :mod:`ulr.cli`."""

import sys

from ulr.cli import main

sys.exit(main())
