"""The dashboard server's process setup: what each script run costs beyond the page's work.

app.py calls both, once per run: :func:`send_at_once` (the sockets' send delay) and
:func:`frozen_imports` (garbage collection after a run that imported). Neither needs
Streamlit, so they live in ulr and are tested with plain pytest (tests/test_server.py).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import socket
import sys
import threading

_NAGLE = {"done": False, "lock": threading.Lock()}


@contextlib.contextmanager
def frozen_imports():
    """Run a page; if the run imported modules, move every object alive then out of the
    garbage collector's reach (:func:`gc.freeze`).

    A page's first run in a process imports pandas, plotly, scikit-learn, DuckDB and
    ulr: some 200,000 objects that live as long as the server. Python's collector
    walks all of them in each full collection, a pause of tens of milliseconds holding
    the GIL in whichever session's run triggers it. Frozen, they are skipped. The run's own
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


def send_at_once(port: int) -> int:
    """Turn Nagle's algorithm off (``TCP_NODELAY``) on this process's sockets on ``port``:
    the server's listening socket, whose new connections inherit the setting, and the
    connections it has accepted so far. Once per process; later calls return 0.

    Streamlit's server (uvicorn) does not set ``TCP_NODELAY`` on its connections. A run
    sends several small websocket messages; the kernel holds each one until the browser
    acknowledges the previous, and browsers delay that acknowledgement (40 ms on Linux,
    up to 200 ms on Windows). So every run, and every script and stylesheet a first view
    fetches, waited for it. Only socket options change, never what is sent; the
    connections are found by their local port among this process's own descriptors
    (``/proc/self/fd``; elsewhere nothing is done).

    Returns how many sockets were changed.
    """
    with _NAGLE["lock"]:
        if _NAGLE["done"]:
            return 0
        _NAGLE["done"] = True
        try:
            fds = [int(name) for name in os.listdir("/proc/self/fd")]
        except OSError:
            return 0
        return sum(_no_delay(fd, port) for fd in fds)


def _no_delay(fd: int, port: int) -> bool:
    """Set ``TCP_NODELAY`` on descriptor ``fd`` if it is a TCP socket on local ``port``;
    the descriptor itself is left as it was (a duplicate is inspected and closed)."""
    try:
        dup = os.dup(fd)
    except OSError:  # closed since it was listed
        return False
    try:
        sock = socket.socket(fileno=dup)
    except OSError:  # not a socket
        os.close(dup)
        return False
    with sock:
        try:
            if (sock.family not in (socket.AF_INET, socket.AF_INET6)
                    or sock.type != socket.SOCK_STREAM or sock.getsockname()[1] != port):
                return False
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return True
        except OSError:
            return False
