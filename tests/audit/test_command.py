"""``python -m ulr audit``: the JSON contract, the saved report and the user errors."""

from ulr.report import saved


def test_audit_of_a_mapped_file_prints_every_question_and_saves_the_report(rec_log, cli,
                                                                           tmp_path):
    import json
    path, _ = rec_log
    r = cli("audit", "--input", path, "--map", "query_id=user_segment", "--map", "doc_id=item_id",
            "--map", "position=slot", "--map", "click=clicked", "--map", "logger=policy",
            "--map", "propensity=propensity_score", "--features", "item_emb_*",
            "--fact", "per_slot_propensity", "--db", tmp_path / "reports.duckdb",
            "--report", "Recs audit", "--json")
    assert r.rc == 0, r.err
    out = json.loads(r.out)
    qs = out["questions"]
    assert [q["id"] for q in qs] == ["ctr_by_position", "position_bias", "user_models",
                                     "rankers", "off_policy", "policy_learning",
                                     "several_loggers", "replay", "slates"]
    for q in qs:
        assert {"id", "question", "answerable", "reason", "verdict", "seconds"} <= set(q)
        assert (q["verdict"] is not None) == q["answerable"] == (q["reason"] is None)
    yes = {q["id"] for q in qs if q["answerable"]}
    assert {"off_policy", "policy_learning", "several_loggers", "ctr_by_position",
            "position_bias"} <= yes
    no = {q["id"]: q["reason"] for q in qs if not q["answerable"]}
    assert "session_id" in no["user_models"] and "session_id" in no["replay"]
    pb = next(q for q in qs if q["id"] == "position_bias")
    assert pb["link"].startswith("/position_bias?propensity=em&positions=3&bootstrap=50")
    items = saved.items(out["report"], actor=saved.OPERATOR, db=str(tmp_path / "reports.duckdb"))
    assert len(items) == 1 + len(yes)
    assert [it.verdict["level"] for it in items[1:]] == [
        q["verdict"]["level"] for q in qs if q["answerable"]]
    # stakeholder text: no count the log lacks ("None sessions"), no identifier as a unit
    assert all(v is not None and "_" not in k for it in items for k, v in it.evidence.items())
    note = items[0].note
    assert "6,000 rows" not in note and "4,500 rows" in note  # 1,500 impressions x 3 slots
    for q in qs:
        if not q["answerable"]:
            assert q["question"] in note and q["reason"] in note
    # the human form: one line per question, then what to explore and the report
    from ulr.commands.audit import render
    lines = render(out).splitlines()
    assert sum(line.startswith(("  yes  ", "  no   ")) for line in lines) == len(qs)
    assert any(line.startswith("  yes  position_bias (em): ") for line in lines)
    assert "Severity sweep" in render(out) and out["report"] in render(out)


def test_audit_user_errors_are_one_line(cli, user_error, tmp_path):
    user_error(cli("audit"), "name a click log")
    user_error(cli("audit", "--db", tmp_path / "none.duckdb", "--name", "x"), "does not exist")
    user_error(cli("audit", "--input", "data/sample_clicks.csv", "--report", "  "),
               "--report needs a title")
