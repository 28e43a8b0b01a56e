"""Uploaded files waiting in the dashboard's form: private, short-lived copies on disk.

The loader reads files, so the Data page copies an upload to disk while its mapping form is
pending (:func:`write`). The copies live in the store's own folder, ``data/ulr_uploads/``
beside ``data/ulr.duckdb`` (``ULR_DB`` moves both), made with mode 0700; each copy is
0600, so only the account that runs the server can read it. A copy is deleted

- when it is loaded, or refused by the loader (:func:`remove`);
- when its file is removed from the form, or replaced by another file;
- when its tab is gone: the open form touches its copy every :data:`HEARTBEAT_S` seconds
  (:func:`touch`), and :func:`sweep` deletes a copy not touched for :data:`STALE_S`
  seconds. A sweeper thread (:func:`start_sweeper`) runs it every :data:`SWEEP_EVERY_S`
  seconds in each dashboard process, from the process's start: a closed tab's copy is
  gone within a minute, and copies left by a killed server go when the next one starts.

A tab that is open but throttled by its browser may miss heartbeats; its copy is then
written again from the upload Streamlit still holds for it the next time the form needs
it. The copies waiting at once may take at most :func:`cap_bytes` bytes (operator
setting ``ULR_UPLOADS_MAX_MB``); a file that would pass it is refused in one sentence.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
import uuid
from pathlib import Path

from ulr.data.files import store_path
from ulr.errors import UlrError

HEARTBEAT_S = 15.0
STALE_S = 40.0
SWEEP_EVERY_S = 10.0
#: default of ``ULR_UPLOADS_MAX_MB``: two uploads of the largest size the form accepts
DEFAULT_CAP_MB = 4000

_sweepers: set[str] = set()
_sweepers_lock = threading.Lock()


def folder(db_path=None) -> Path:
    """The private folder of pending copies of store ``db_path`` (made 0700 if missing).

    Refuses a folder that is a symbolic link or is not the server's own: a copy is never
    written where another account could read it."""
    p = Path(store_path(db_path))
    d = p.with_name(p.stem + "_uploads")
    d.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        d.mkdir(mode=0o700)
    st_ = os.lstat(d)
    if not stat.S_ISDIR(st_.st_mode) or st_.st_uid != os.getuid():
        raise UlrError("the server's upload folder is not its own; ask the operator.")
    if stat.S_IMODE(st_.st_mode) != 0o700:
        os.chmod(d, 0o700)
    return d


def cap_bytes() -> int:
    """The most bytes the pending copies may take together (``ULR_UPLOADS_MAX_MB``)."""
    try:
        mb = int(os.environ.get("ULR_UPLOADS_MAX_MB", ""))
    except ValueError:
        mb = DEFAULT_CAP_MB
    return (mb if mb >= 1 else DEFAULT_CAP_MB) * 1_000_000


def pending_bytes(db_path=None) -> int:
    """Bytes the pending copies take now."""
    total = 0
    for f in folder(db_path).iterdir():
        with contextlib.suppress(OSError):
            total += f.stat().st_size
    return total


def _mb(n: int) -> str:
    return f"{max(n, 1) / 1e6:,.0f} MB" if n >= 1_000_000 else f"{n / 1e6:,.1f} MB"


def write(chunks, size: int, *, key: str, suffix: str, db_path=None, progress=None) -> Path:
    """Write one upload's copy (0600) from ``chunks`` (an iterable of bytes) of ``size`` bytes;
    ``key`` names it (the upload's id: one copy per upload), ``progress(done)`` is told
    each chunk. Refuses a file that would take the pending copies past :func:`cap_bytes`."""
    sweep(db_path)
    path = path_of(key, suffix, db_path)
    d = path.parent
    if path.exists():
        touch(path)
        return path
    held, cap = pending_bytes(db_path), cap_bytes()
    if held + size > cap:
        raise UlrError(f"the server holds {_mb(held)} of uploads waiting to be loaded, and "
                       f"this file ({_mb(size)}) would take that past its limit of "
                       f"{_mb(cap)}; load or remove a pending upload, or try again in a "
                       "minute.")
    tmp = d / f".part-{uuid.uuid4().hex}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            done = 0
            for chunk in chunks:
                fh.write(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def path_of(key: str, suffix: str, db_path=None) -> Path:
    """Where the copy of upload ``key`` (a file of type ``suffix``) is written."""
    return folder(db_path) / f"{_safe(key)}{_safe(suffix)}"


def _safe(text: str) -> str:
    """A file-name part from ``text``: letters, digits, '-', '_' and '.' only."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_.") else "_"
                   for ch in str(text))[:120]


def touch(path) -> None:
    """The form of ``path``'s copy is still open (a heartbeat); None: no copy."""
    if path:
        with contextlib.suppress(OSError):
            os.utime(path)


def remove(path) -> None:
    """Delete a copy (loaded, refused, removed from the form)."""
    if path:
        Path(path).unlink(missing_ok=True)


_busy: dict[str, int] = {}
_busy_lock = threading.Lock()


@contextlib.contextmanager
def in_use(path):
    """A load or check reads ``path``: the sweepers of every process leave it alone (this
    process's sweeper keeps touching it) until the block ends."""
    key = str(path)
    with _busy_lock:
        _busy[key] = _busy.get(key, 0) + 1
    touch(path)
    try:
        yield path
    finally:
        with _busy_lock:
            _busy[key] -= 1
            if not _busy[key]:
                del _busy[key]


def sweep(db_path=None, *, now: float | None = None) -> list[Path]:
    """Delete copies whose form sent no heartbeat for :data:`STALE_S` seconds (their tab
    is closed, or their server was stopped); returns them."""
    with _busy_lock:
        busy = set(_busy)
    for f in busy:
        touch(f)
    now = time.time() if now is None else now
    gone = []
    for f in folder(db_path).iterdir():
        if str(f) in busy:
            continue
        with contextlib.suppress(OSError):  # another process may delete it first
            if f.stat().st_mtime < now - STALE_S:
                f.unlink()
                gone.append(f)
    return gone


def start_sweeper(db_path=None) -> None:
    """Sweep now, and every :data:`SWEEP_EVERY_S` seconds in a daemon thread (once per
    process and store)."""
    db = store_path(db_path)
    with _sweepers_lock:
        if db in _sweepers:
            return
        _sweepers.add(db)
    with contextlib.suppress(OSError, UlrError):
        sweep(db)

    def run():
        while True:
            time.sleep(SWEEP_EVERY_S)
            with contextlib.suppress(OSError, UlrError):
                sweep(db)
    threading.Thread(target=run, name="ulr-upload-sweeper", daemon=True).start()
