"""Test set-up: every test session works on its own throw-away database."""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_TMP = tempfile.mkdtemp(prefix="ulr_test_")
os.environ.setdefault("ULR_DB", os.path.join(_TMP, "ulr_test.duckdb"))
os.environ.setdefault("ULR_MEMORY_LIMIT", "2GB")
