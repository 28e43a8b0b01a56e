"""``python -m ulr``: see :mod:`ulr.cli`."""

import signal
import sys

from ulr.cli import main


def _terminated(signum, frame):
    # SIGTERM (kill, a job scheduler's stop) ends a command as Ctrl-C does: every
    # ``finally`` runs, so an interrupted load removes its temporary Parquet files.
    raise KeyboardInterrupt


signal.signal(signal.SIGTERM, _terminated)
sys.exit(main(end_at_once=True))
