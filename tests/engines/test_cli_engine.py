"""``propensity --engine {duckdb,spark}`` (docs/contract.md §2)."""

import json

import numpy as np
import pytest

from ulr.simulate import simulate_clicks


@pytest.fixture(scope="module")
def pq(tmp_path_factory):
    sim = simulate_clicks(queries=20, positions=5, sessions=800, seed=8)
    root = tmp_path_factory.mktemp("cli_lake")
    sim.df.to_parquet(root / "part-0.parquet")
    return root


def test_engines_agree_on_the_cli(spark, cli, pq):
    outs = []
    for engine in ("duckdb", "spark"):
        r = cli("propensity", "--method", "em", "--engine", engine, "--input",
                str(pq / "*.parquet"), "--bootstrap", "10", "--json")
        assert r.rc == 0, r.err
        outs.append(json.loads(r.out))
    np.testing.assert_allclose(outs[1]["theta"], outs[0]["theta"], atol=1e-9, rtol=0)
    np.testing.assert_allclose(outs[1]["upper"], outs[0]["upper"], atol=1e-9, rtol=0)
    assert outs[0]["true_theta"] == outs[1]["true_theta"]
    assert outs[0]["verdict"] == outs[1]["verdict"]


def test_engines_weigh_the_query_column_on_the_first_rows(spark, cli, tmp_path):
    """A query column that is a pair key turns the verdict invalid on both engines, with
    the stored log's reason (tests/engines/test_sources.py compares it with the stored log)."""
    df = simulate_clicks(queries=20, positions=5, sessions=300, seed=8).df
    df["query_id"] = df.query_id.astype(str) + ":" + df.doc_id.astype(str)
    df.to_parquet(tmp_path / "pairs.parquet")
    verdicts = []
    for engine in ("duckdb", "spark"):
        r = cli("propensity", "--method", "em", "--engine", engine, "--input",
                tmp_path / "pairs.parquet", "--bootstrap", "0", "--json")
        assert r.rc == 0, r.err
        verdicts.append(json.loads(r.out)["verdict"])
    assert verdicts[0] == verdicts[1] and verdicts[0]["level"] == "invalid"
    assert [r["code"] for r in verdicts[0]["reasons"]] == ["single_document_queries"]


def test_bad_engine_input(spark, cli, pq, user_error, tmp_path):
    user_error(cli("propensity", "--method", "em", "--engine", "spark", "--input",
                   str(tmp_path / "none" / "*.parquet")), "no Parquet or CSV file matches")
    user_error(cli("propensity", "--method", "em", "--engine", "spark", "--table", "nope"),
               "has no table")
    user_error(cli("propensity", "--method", "em", "--engine", "spark", "--spark-master",
                   "spark://127.0.0.1:1", "--input", str(pq)), "not reachable")
    user_error(cli("propensity", "--method", "em", "--engine", "duckdb", "--table", "t"),
               "--table needs --engine spark")
    user_error(cli("propensity", "--method", "em", "--engine", "spark", "--spark-conf", "x",
                   "--input", str(pq)), "KEY=VALUE")


def test_spark_failing_for_real_prints_one_line(cli_process, pq):
    """A real process: the JVM starts (its startup noise, e.g. the JDK's incubator-module
    warning and Spark's log-level lines, goes to its own log file) and the query fails."""
    r = cli_process("propensity", "--method", "em", "--engine", "spark", "--spark-master",
                    "local[2]", "--table", "nope")
    assert (r.rc, r.err, r.out) == (2, "error: Spark has no table 'nope'.\n", "")


def test_spark_succeeding_prints_nothing_on_stderr(cli_process, pq):
    r = cli_process("propensity", "--method", "em", "--engine", "spark", "--spark-master",
                    "local[2]", "--input", pq, "--json")
    assert r.rc == 0 and r.err == ""
    assert json.loads(r.out)["method"] == "em"  # stdout is the JSON alone


def test_a_jvm_that_does_not_start_is_one_line_naming_its_log(cli_process, pq):
    r = cli_process("propensity", "--method", "em", "--engine", "spark", "--spark-conf",
                    "spark.driver.memory=notasize", "--input", pq)
    assert r.rc == 2 and r.err.count("\n") == 1 and r.err.startswith("error: Spark did not start")
    log = r.err.rsplit("Spark's own log: ", 1)[1].rstrip(").\n")
    assert "Invalid maximum heap size" in open(log).read()
