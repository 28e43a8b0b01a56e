"""The system Chromium: finding it, and the temp folders of the browsers exports start.

Every browser an export starts (Chromium for the PDF, kaleido's Chromium for images)
keeps its profile and files in a fresh temp folder named ``EXPORT_PREFIX...``, with an
owner file naming the server process. A process killed mid-export cannot clean up;
the next export removes folders whose owner is gone, with any browser still using them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

# Where the system browser lives: the BROWSER_PATH override (choreographer's own
# convention) first, then Debian/Ubuntu locations, then PATH.
SYSTEM_BROWSERS = ("/usr/bin/chromium", "/usr/bin/chromium-browser",
                   "/usr/bin/google-chrome-stable", "/usr/bin/google-chrome")
_BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")



def find_browser() -> str | None:
    """Path of an installed Chromium/Chrome, or None. Never downloads one.

    ``BROWSER_PATH`` (the variable kaleido's choreographer honours) wins when it
    names an executable file; then the usual system paths; then ``PATH``.
    """
    cands = []
    env = os.environ.get("BROWSER_PATH")
    if env:
        cands.append(env)
    cands += list(SYSTEM_BROWSERS)
    cands += [p for p in (shutil.which(n) for n in _BROWSER_NAMES) if p]
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def static_export_problem() -> str | None:
    """Why static images cannot be made here (one sentence), or None if they can."""
    if importlib.util.find_spec("kaleido") is None:
        return ("static image export needs the kaleido package (pip install kaleido), "
                "which is not installed.")
    if find_browser() is None:
        return ("static image export needs Chromium (on Debian: apt-get install chromium), "
                "which is not installed; set BROWSER_PATH to use another Chrome.")
    return None

EXPORT_PREFIX = "ulr_export_"
_OWNER = "owner.pid"
_LEGACY_PREFIX = "ulr_pdf_"  # folders of earlier versions (no owner file): removed when old
_LEGACY_AGE = 3600.0


def _start_time(pid: int) -> str:
    """The process's start time (clock ticks since boot) as text; "" when unknown.

    Together with the pid it names a process: a pid reused later has another start time.
    """
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _owner_alive(folder: Path) -> bool:
    try:
        pid_text, _, started = (folder / _OWNER).read_text().strip().partition(" ")
        pid = int(pid_text)
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return not started or not os.path.isdir("/proc") or _start_time(pid) == started


def _processes() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, process group, command line) of every process we can read."""
    out = {}
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        out[int(entry.name)] = (int(fields[1]), int(fields[2]), cmd)
    return out


def _kill_browsers(folder: Path) -> int:
    """Kill every process whose command line names ``folder`` (a browser's
    ``--user-data-dir`` or output there), with its descendants and, for a group
    leader (a browser started in its own session), its whole group. Returns the count."""
    procs = _processes()
    me = os.getpid()
    needle = str(folder) + os.sep
    roots = {p for p, (_, _, cmd) in procs.items() if needle in cmd and p != me}
    victims = set(roots)
    victims |= {p for p, (_, pgid, _) in procs.items() if pgid in roots}
    grew = True
    while grew:
        more = {p for p, (ppid, _, _) in procs.items() if ppid in victims} - victims
        victims |= more
        grew = bool(more)
    victims.discard(me)
    for pid in victims:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return len(victims)


def clean_orphans(root: str | os.PathLike | None = None) -> int:
    """Remove export folders (and kill their browsers) whose owner process is gone.

    ``root`` defaults to the temp directory. Folders of live processes, this one
    included, are left alone. Returns the number of folders removed.
    """
    root = Path(root or tempfile.gettempdir())
    removed = 0
    try:
        entries = list(root.iterdir())
    except OSError:
        return 0
    for folder in entries:
        name = folder.name
        try:
            if name.startswith(EXPORT_PREFIX):
                if _owner_alive(folder):
                    continue
            elif name.startswith(_LEGACY_PREFIX):
                if time.time() - folder.stat().st_mtime < _LEGACY_AGE:
                    continue
            else:
                continue
            if not folder.is_dir() or folder.is_symlink():
                continue
        except OSError:
            continue
        _kill_browsers(folder)
        shutil.rmtree(folder, ignore_errors=True)
        removed += not folder.exists()
    return removed


@contextlib.contextmanager
def export_folder():
    """A fresh temp folder for one export's browser, removed afterwards with any
    browser still using it (timeout, failure); orphans of killed exports go first."""
    clean_orphans()
    folder = Path(tempfile.mkdtemp(prefix=EXPORT_PREFIX))
    try:
        (folder / _OWNER).write_text(f"{os.getpid()} {_start_time(os.getpid())}")
        yield folder
    finally:
        _kill_browsers(folder)
        shutil.rmtree(folder, ignore_errors=True)

