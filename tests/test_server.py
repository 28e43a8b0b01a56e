"""The dashboard server's process setup (ulr.server): sockets and garbage collection."""

import os
import time

from ulr import server


def test_a_run_that_imports_freezes_what_is_alive_and_others_do_not():
    import gc
    import sys
    import types
    before = gc.get_freeze_count()
    with server.frozen_imports():
        pass
    assert gc.get_freeze_count() == before
    name = f"_ulr_probe_{time.time_ns()}"
    try:
        with server.frozen_imports():
            sys.modules[name] = types.ModuleType(name)
            kept = [[] for _ in range(100)]
        assert gc.get_freeze_count() >= before + len(kept)
    finally:
        sys.modules.pop(name, None)
        gc.unfreeze()


def _nodelay(sock) -> int:
    import socket
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def _open_fds() -> set:
    """This process's open descriptors (not the one listing them, closed by then)."""
    def is_open(fd):
        try:
            os.fstat(fd)
            return True
        except OSError:
            return False
    return {fd for fd in map(int, os.listdir("/proc/self/fd")) if is_open(fd)}


def test_send_at_once_turns_nagle_off_on_the_servers_port_only(monkeypatch):
    """The server's listening socket and the connections it accepted get TCP_NODELAY,
    and connections it accepts later inherit it; another port's sockets, the client's end
    and every other descriptor are left as they were, and no descriptor leaks."""
    import socket
    monkeypatch.setitem(server._NAGLE, "done", False)
    fds = _open_fds()
    with open(__file__, "rb") as own, socket.create_server(("127.0.0.1", 0)) as listener, \
            socket.create_server(("127.0.0.1", 0)) as other:
        port = listener.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = listener.accept()
        before = _open_fds()
        assert [_nodelay(s) for s in (listener, accepted, client, other)] == [0, 0, 0, 0]

        assert server.send_at_once(port) == 2
        assert [_nodelay(s) for s in (listener, accepted, client, other)] == [1, 1, 0, 0]
        later_client = socket.create_connection(("127.0.0.1", port))
        later, _ = listener.accept()
        assert _nodelay(later) == 1                     # inherited from the listener
        assert server.send_at_once(port) == 0               # once per process
        assert _open_fds() == before | {later_client.fileno(), later.fileno()}
        own.seek(0)
        assert own.read(3) == b'"""'                    # other descriptors still work
        accepted.sendall(b"ok")
        assert client.recv(2) == b"ok"
        for s in (client, accepted, later_client, later):
            s.close()
    assert _open_fds() == fds


def test_the_app_sends_at_once_on_its_servers_port(monkeypatch):
    from pathlib import Path

    import streamlit as st
    from streamlit.testing.v1 import AppTest
    calls = []
    monkeypatch.setattr(server, "send_at_once", lambda port: calls.append(port) or 0)
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"),
                           default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert calls == [st.get_option("server.port")]
