"""The suite in pieces (issue 53): every entry of tests/slow_tests.txt names a test that
exists, so the fast loop (``pytest -m "not slow and not e2e"``) cannot keep a stale list."""

import re

from tests.conftest import ROOT, slow_entries


def stale(entries) -> list[str]:
    """The entries whose file, class or test function is not in the tree."""
    out = []
    for entry in entries:
        path, _, rest = entry.partition("::")
        f = ROOT / path
        if not (path.startswith("tests/") and f.is_file()):
            out.append(entry)
            continue
        if rest:
            *classes, func = rest.split("[", 1)[0].split("::")
            text = f.read_text()
            names = [rf"^\s*class {c}\b" for c in classes] + [rf"^\s*def {func}\("]
            if not all(re.search(n, text, re.M) for n in names):
                out.append(entry)
    return out


def test_every_slow_entry_names_an_existing_test():
    entries = slow_entries()
    assert entries, "tests/slow_tests.txt lists no test"
    assert stale(entries) == []
    assert len(entries) == len(set(entries)), "an entry is listed twice"


def test_a_stale_entry_is_caught():
    """The check can fail: a test that is gone and a file that is gone are both found."""
    gone = ["tests/test_markers.py::test_gone[1]", "tests/nope.py",
            "tests/test_markers.py::stale"]
    assert stale(gone) == gone[:2]


def test_cli_and_apptest_markers_follow_what_a_test_drives(tmp_path):
    """``cli`` for tests under tests/commands, using the ``cli`` fixture or running
    ``python -m ulr``; ``apptest`` for modules that drive pages with AppTest; neither for
    a plain unit test."""
    from types import SimpleNamespace

    from tests import conftest

    def item(nodeid, text, fixtures=()):
        f = tmp_path / nodeid.split("::")[0].replace("/", "_")
        f.write_text(text)
        marks = []
        return SimpleNamespace(nodeid=nodeid, path=f, fspath=f, fixturenames=list(fixtures),
                               add_marker=lambda m: marks.append(m.name),
                               get_closest_marker=lambda name: None, marks=marks)
    plain = item("tests/metrics/test_x.py::test_a", "def test_a(): pass")
    cmd = item("tests/commands/test_y.py::test_b", "def test_b(): pass")
    sub = item("tests/data/test_z.py::test_c", 'run([sys.executable, "-m", "ulr", "x"])')
    fix = item("tests/data/test_w.py::test_d", "def test_d(cli): pass", fixtures=("cli",))
    page = item("tests/pages/test_v.py::test_e", "from streamlit.testing.v1 import AppTest")
    conftest.pytest_collection_modifyitems(None, [plain, cmd, sub, fix, page])
    assert plain.marks == []
    assert cmd.marks == sub.marks == fix.marks == ["cli"]
    assert page.marks == ["apptest"]
