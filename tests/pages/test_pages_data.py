"""Data page through Streamlit's AppTest (upload included)."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


def run_app():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    at.switch_page("pages/data.py").run()
    assert not at.exception, at.exception
    return at


def load_button(at):
    return at.button(key="load_btn")


def press_load(at):
    """Load, as a browser does it: the mapping's last change has re-run the page (and its
    check) before the button is pressed."""
    at.run()
    load_button(at).click()
    at.run()


def metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


def test_opens_on_sample_with_summary_and_chart():
    at = run_app()
    assert at.title[0].value == "Data"
    assert metric(at, "Rows") == "50,000"
    assert metric(at, "Queries") == "500"
    assert len(at.get("plotly_chart")) >= 1
    assert at.session_state["dataset"] == "sample"


def test_upload_maps_and_stores_then_bad_upload_is_refused():
    at = run_app()
    csv = "qid,doc,rank,clicked,noise\n" + "".join(
        f"q{i % 7},d{i},{1 + i % 5},{int(i % 3 == 0)},x\n" for i in range(120))
    at.get("file_uploader")[0].set_value(("their_log.csv", csv.encode(), "text/csv")).run()
    assert not at.exception
    # Auto-detected mapping is pre-filled in the form.
    assert at.multiselect(key="map_position").value == ["rank"]
    assert at.multiselect(key="map_click").value == ["clicked"]
    at.text_input(key="ds_name").input("my upload")
    press_load(at)
    assert not at.exception
    assert any("Stored “my upload” with 120 rows" in s.value for s in at.success)
    # issue 50: "Stored …" says it once; no "You have a dataset named … already" beside it
    assert not any("already" in i.value for i in at.info), [i.value for i in at.info]
    assert metric(at, "Rows") == "120"
    # (AppTest drops the entrypoint's sidebar on reruns, so read the app state.)
    assert at.session_state["dataset"] == "my upload"
    assert at.subheader[0].value == "“my upload”"
    preview = at.dataframe[-1].value                # the new dataset's rows, not the sample's
    assert len(preview) == 100 and "noise" in preview.columns
    assert sorted(preview["position"].unique()) == [1, 2, 3, 4, 5]

    bad = "query_id,doc_id,position,click\nq,d,0,1\nq,d,1,7\n"
    at.get("file_uploader")[0].set_value(("bad.csv", bad.encode(), "text/csv")).run()
    at.text_input(key="ds_name").input("bad one")
    press_load(at)
    assert not at.exception
    errs = [e.value for e in at.error]
    assert errs and "Not loaded: refused bad.csv" in errs[0] and "position" in errs[0]
    assert "tick “Skip bad rows”" in errs[0] and "skip_bad_rows" not in errs[0]
    assert at.session_state["dataset"] == "my upload"
    from ulr.data import catalog
    assert "bad one" not in [d.name for d in catalog.list_datasets(catalog.cursor())]


def test_home_page_lists_questions_and_figures():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    assert at.title[0].value.startswith("ulr")
    assert metric(at, "Rows") == "50,000"
    assert at.session_state["dataset"] == "sample"


def test_shared_link_with_unknown_dataset_falls_back_to_sample():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["dataset"] = "no such dataset"
    at.run()
    assert not at.exception
    assert at.session_state["dataset"] == "sample"
    assert any("does not exist" in w.value for w in at.warning)


def _upload_foreign(at, name="foreign"):
    from ulr.simulate import obd_like_log
    csv = obd_like_log(impressions=150, items=10).to_csv(index=False)
    at.get("file_uploader")[0].set_value((f"{name}.csv", csv.encode(), "text/csv")).run()
    assert not at.exception, at.exception
    at.text_input(key="ds_name").input(name)


QUERY = ["user_feature_0", "user_feature_1", "user_feature_2", "user_feature_3"]


def test_form_maps_a_composite_query_features_and_declared_facts():
    from ulr.data import catalog
    at = run_app()
    _upload_foreign(at, "form foreign")
    at.multiselect(key="map_query_id").set_value(QUERY)
    at.multiselect(key="map_session_id").set_value(["timestamp"])
    at.checkbox(key="fact_randomized").check()
    at.checkbox(key="fact_per_slot").check()
    at.text_input(key="feature_patterns").input("user-item_affinity_*")
    press_load(at)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    info = catalog.get_dataset(catalog.cursor(), "form foreign")
    assert info.facts.randomized and info.facts.per_slot_propensity
    assert info.facts.query_key == tuple(QUERY)
    assert len(info.features) == 10 and info.mapping["constants"] == {"randomized": True}
    # The Data page shows the mapping and the declared facts.
    assert any("randomized" in m.value and "Declared" in m.value for m in at.markdown)


def _digest():
    import hashlib
    import json

    from ulr.data import catalog
    cur = catalog.cursor()
    h = hashlib.sha256()
    for info in catalog.list_datasets(cur):
        h.update(json.dumps([info.name, info.table, info.mapping], default=str).encode())
        h.update(cur.execute(f"SELECT * FROM {info.table}").df().to_csv().encode())
    return h.hexdigest()


def test_form_refuses_each_bad_spec_in_one_sentence_and_stores_nothing():
    at = run_app()
    _upload_foreign(at, "refused")
    at.multiselect(key="map_query_id").set_value(["user_feature_0"])
    cases = [
        (lambda: at.text_input(key="feature_patterns").input("nothing_like_this_*"),
         "nothing_like_this\\_\\*"),  # shown as typed (ulr.text.literal)
        (lambda: at.text_input(key="feature_patterns").input("user_feature_2"),
         "'user_feature_2' is not numeric"),
        (lambda: (at.text_input(key="feature_patterns").input(""),
                  at.multiselect(key="map_query_id").set_value([])), "'query_id'"),
    ]
    before = _digest()
    for act, needle in cases:  # said as the mapping changes, before Load, which is disabled
        act()
        at.run()
        assert not at.exception, at.exception
        errs = [e.value for e in at.error]
        assert len(errs) == 1 and needle in errs[0], errs
        assert errs[0].startswith("This mapping cannot be loaded: "), errs
        assert "--" not in errs[0] and load_button(at).disabled
        assert _digest() == before


def test_upload_copies_are_deleted_and_messages_name_the_users_file(tmp_path, monkeypatch):
    import os
    import stat
    import time

    from ulr.data import catalog, uploads
    folder = uploads.folder()  # the store's private folder of pending copies
    for f in folder.iterdir():  # forms earlier tests left open
        f.unlink()
    abandoned = folder / "abandoned.csv"
    abandoned.write_text("left by a session whose tab is gone")
    os.utime(abandoned, (time.time() - uploads.STALE_S - 5,) * 2)  # no heartbeat since

    def copies():
        return sorted(p.name for p in folder.iterdir())

    def upload(name, text):
        at.get("file_uploader")[0].set_value((name, text.encode(), "text/csv")).run()
        assert not at.exception, at.exception

    def only_error(needle, file_name):
        errs = [e.value for e in at.error]
        assert len(errs) == 1 and needle in errs[0], errs
        assert errs[0].count(".csv") == errs[0].count(file_name), errs  # no copy's name
        assert "--" not in errs[0] and "skip_bad_rows" not in errs[0]

    at = run_app()
    upload("my clicks.csv", "query_id,doc_id,position,click\nq,a,1,1\nq,b,2,0\n")
    assert len(copies()) == 1 and "abandoned.csv" not in copies()  # pending; old one swept
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # only the server's account reads
    assert stat.S_IMODE((folder / copies()[0]).stat().st_mode) == 0o600
    at.text_input(key="ds_name").input("copies gone")
    press_load(at)
    assert any("Stored “copies gone” with 2 rows" in s.value for s in at.success)
    assert copies() == []  # loaded: the copy is gone, and re-runs do not write it again

    nan = "query_id,doc_id,position,click,feature_a\nq,a,1,1,0.5\nq,b,2,0,inf\nq,c,3,0,nan\n"
    upload("nan clicks.csv", nan)
    assert len(copies()) == 1
    at.text_input(key="ds_name").input("nan upload")
    press_load(at)
    only_error("Not loaded: refused nan clicks.csv: column 'feature_a'", "nan clicks.csv")
    assert "(values 'inf', 'nan')" in at.error[0].value and "tick “Skip bad rows”" in \
        at.error[0].value
    assert copies() == []  # refused: gone too
    assert "nan upload" not in [d.name for d in catalog.list_datasets(catalog.cursor())]
    at.checkbox(key="skip_bad").check()
    press_load(at)
    assert any("Stored “nan upload” with 1 rows. 2 bad rows were skipped" in s.value
               for s in at.success), [s.value for s in at.success]
    assert copies() == []

    upload("dup clicks.csv", "query_id,doc_id,position,click,f,f\nq,a,1,1,1,2\n")
    only_error("This file cannot be read: dup clicks.csv has more than one column named 'f'",
               "dup clicks.csv")
    assert copies() == []
    upload("empty clicks.csv", "")
    only_error("empty clicks.csv is empty", "empty clicks.csv")
    assert copies() == []


def test_load_warns_when_sessions_are_not_shown_lists_and_caption_follows_the_data():
    """Slots that do not share a timestamp: mapping session_id to it is named at load, with
    the fix; the CTR caption of a randomized log never credits the ranker."""
    from ulr.simulate import obd_like_log
    at = run_app()
    csv = obd_like_log(impressions=300, items=10, row_timestamps=True).to_csv(index=False)
    at.get("file_uploader")[0].set_value(("rows.csv", csv.encode(), "text/csv")).run()
    at.text_input(key="ds_name").input("row stamps")
    at.multiselect(key="map_query_id").set_value(QUERY)
    at.multiselect(key="map_session_id").set_value(["timestamp"])
    at.checkbox(key="fact_randomized").check()
    at.run()  # said before Load, as the mapping changes: nothing is stored yet
    before = [w.value for w in at.warning if w.value.startswith("Check the mapping: ")]
    assert len(before) == 1 and "'timestamp', mapped to session_id, differs between the " \
        "documents shown together" in before[0], before
    assert "unmapped" not in before[0] and "--" not in before[0]
    from ulr.data import catalog
    assert "row stamps" not in [d.name for d in catalog.list_datasets(catalog.cursor())]
    at.multiselect(key="map_session_id").set_value([])  # no column groups a list here
    at.run()
    assert not [w for w in at.warning if w.value.startswith("Check the mapping: ")]
    assert any("fits the file's first rows" in c.value for c in at.caption)
    at.multiselect(key="map_session_id").set_value(["timestamp"])  # loaded anyway: warned
    press_load(at)
    assert not at.exception, at.exception
    warned = [w.value for w in at.warning if "sessions hold a single row" in w.value]
    assert warned and "map a column that groups one shown list" in warned[0]
    assert "--" not in warned[0]  # a browser message never names a command-line flag
    text = " ".join(m.value for m in at.markdown)
    assert "randomized" in text and "better documents on top" not in text


def test_ctr_takeaway_follows_a_rise_with_position():
    """A log whose click rate rises with position (a logger that shows its best items
    lower): the Data page's takeaway says "rise", never the fixed "A fall with position"."""
    import numpy as np
    rng = np.random.default_rng(5)
    sessions, rates = 3000, (0.03, 0.06, 0.10)
    rows = ["query_id,doc_id,position,click,session_id"]
    for s in range(sessions):
        for k, r in enumerate(rates, start=1):
            rows.append(f"q{s % 50},d{(s + k) % 80},{k},{int(rng.random() < r)},s{s}")
    at = run_app()
    at.get("file_uploader")[0].set_value(("rise.csv", "\n".join(rows).encode(),
                                          "text/csv")).run()
    at.text_input(key="ds_name").input("rising")
    load_button(at).click()
    at.run()
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "Clicks rise with position" in text and "A rise with position" in text
    assert "fall" not in text.split("Clicks rise with position")[1][:300]
    pcts = [w for w in text.split() if w.endswith("%")]
    assert pcts and len({len(w.rstrip("%,).").split(".")[-1]) for w in pcts[:2]}) == 1


def test_only_the_browser_that_loaded_a_dataset_renames_deletes_or_replaces_it():
    """Two browsers (two AppTest sessions, each with its own id): B sees and uses A's
    dataset, but is offered no rename or delete, and cannot take its name; A can."""
    from ulr.data import catalog
    csv = "query_id,doc_id,position,click\n" + "".join(
        f"q{i % 5},d{i},{1 + i % 4},{int(i % 3 == 0)}\n" for i in range(40))
    a = run_app()
    a.get("file_uploader")[0].set_value(("a.csv", csv.encode(), "text/csv")).run()
    a.text_input(key="ds_name").input("alice log")
    press_load(a)
    assert any("Stored “alice log”" in s.value for s in a.success)
    assert not [w for w in a.button if w.key == "delete_btn"]  # folded: drawn when opened
    a.session_state["data_manage_open"] = True  # as a click on "Manage datasets" would
    a.run()
    assert a.button(key="delete_btn") is not None

    b = AppTest.from_file(APP, default_timeout=60)
    b.query_params["dataset"] = "alice log"
    b.run()
    b.switch_page("pages/data.py").run()
    assert not b.exception and b.session_state["dataset"] == "alice log"
    assert metric(b, "Rows") == "40"  # B uses it
    b.session_state["data_manage_open"] = True
    b.run()
    assert not [w for w in b.button if w.key in ("delete_btn", "rename_btn")]
    assert any("“alice log” was loaded by someone else; you can use it, but only they or the "
               "operator can rename or delete it." == c.value for c in b.caption)
    b.get("file_uploader")[0].set_value(("b.csv", csv.encode(), "text/csv")).run()
    b.text_input(key="ds_name").input("alice log")
    b.checkbox(key="replace").check()
    b.run()
    assert any("exists already" in w.value and "loaded by someone else" in w.value
               for w in b.warning)
    assert load_button(b).disabled
    info = catalog.get_dataset(catalog.cursor(), "alice log")
    assert info.rows == 40 and info.owner.startswith("browser:")

    a.checkbox(key="delete_sure").check()
    a.run()
    a.button(key="delete_btn").click()
    a.run()
    assert not a.exception, a.exception
    assert "alice log" not in [d.name for d in catalog.list_datasets(catalog.cursor())]


def test_a_name_that_reads_like_a_stored_one_is_named_before_load():
    """'Sample ' and 'SAMPLE' read like the stored 'sample': the form says so, naming it,
    and Load is off (issue 55); ' sample' is the sample's own name, trimmed."""
    at = run_app()
    at.get("file_uploader")[0].set_value(
        ("alike.csv", b"query_id,doc_id,position,click\nq,a,1,1\nq,b,2,0\n", "text/csv")).run()
    at.text_input(key="ds_name").input("SAMPLE").run()
    warns = [w.value for w in at.warning if "reads like the stored dataset" in w.value]
    assert len(warns) == 1 and "“sample”" in warns[0] and "“SAMPLE”" in warns[0], warns
    assert load_button(at).disabled
    at.text_input(key="ds_name").input("  sample ").run()
    assert not [w for w in at.warning if "reads like" in w.value]
    assert any("dataset named “sample”" in m.value for m in [*at.warning, *at.info])
