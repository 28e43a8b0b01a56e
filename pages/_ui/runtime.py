"""What each script run costs the server beyond the page's own work."""

from __future__ import annotations

import atexit
import contextlib
import gc
import sys


@contextlib.contextmanager
def frozen_imports():
    """Run a page; if the run imported modules, move every object alive then out of the
    garbage collector's reach (:func:`gc.freeze`).

    A page's first run in a process imports pandas, plotly, scikit-learn, DuckDB and
    ulr: some 200,000 objects that live as long as the server. Python's collector
    walks all of them in each full collection, a pause of 40-130 ms holding the GIL in
    whichever session's run triggers it. Frozen, they are skipped. The run's own
    cyclic garbage is collected first, so only what is still in use is frozen; objects
    freed by reference counting are freed as before. At most one run per page and
    process pays that collection.
    """
    before = len(sys.modules)
    try:
        yield
    finally:
        if len(sys.modules) > before:
            gc.collect()
            gc.freeze()


# Unfrozen at exit, the interpreter's last collection still sees every object (extension
# modules such as DuckDB's report objects they find alive at shutdown as leaks).
atexit.register(gc.unfreeze)
