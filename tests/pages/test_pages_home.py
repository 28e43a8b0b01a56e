"""Home page: every page of the navigation is linked with the question it answers."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from pages import _ui as ui

ROOT = Path(__file__).resolve().parents[2]


def test_home_links_every_page_with_its_question():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    links = at.main.get("page_link")
    others = [(path, title) for path, title, _icon, home in ui.PAGES if not home]
    assert len(links) == len(others) == len(ui.PAGES) - 1
    for link, (path, title) in zip(links, others, strict=True):
        assert link.proto.page == Path(path).stem, (link.proto.page, path)
        label = link.proto.label
        assert label.startswith(f"**{title}** — ") and label.endswith("?"), label
