"""One report item of every kind the app can add, built as the pages build them.

Each item comes from the same ``ulr`` computation and figure builder as the page's
``ui.add_to_report(...)`` call (title, figure, table, settings, caveats, evidence,
takeaway), on small data: a real-shaped e-commerce log (0.4% CTR, two loggers)
for the data, off-policy and slate items, a simulated click log with features for
position bias and the rankers, and the simulations the other pages run. Replay
has no "Add to report" button; its item is the table of what the page shows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ulr import propensity, rankers

from ulr.data import catalog, ingest

from ulr.data.summary import ctr_by_position, summary, true_theta
from ulr.bandits.plots import lab_figure
from ulr.bandits.envs import make_env
from ulr.bandits.replay import replay
from ulr.bandits.simulate import BanditLab
from ulr.ope import figures as F
from ulr.ope.evaluate import evaluate_log
from ulr.ope.loggers import make_multi_logger_log
from ulr.ope.slate import LABELS as SLATE_LABELS
from ulr.ope.slate import slate_from_log
from ulr.ope.study import crm_study, simulation_study
from ulr.plots import ctr_by_position_figure
from ulr.propensity import plots as pplots
from ulr.recommend.data import simulate_mnar
from ulr.recommend.experiment import MFConfig, results_figure, results_table, run_experiment
from ulr.report import ReportItem
from ulr.simulate import simulate_clicks, write_log

ROOT = Path(__file__).resolve().parent.parent


def _frame(table: pd.DataFrame) -> pd.DataFrame:
    t = table.copy()
    t.insert(0, "method", t["estimator"].map(lambda e: F.LABELS.get(e, e)))
    return t.rename(columns={"variance_ratio": "variance vs pooled IPS"})


def _ope_item(res, name, s) -> ReportItem:
    d = res.diagnostics
    return ReportItem.from_result(
        f"Off-policy estimates of the target policy: {s['target']}",
        fig=F.estimates_figure(res.table), table=_frame(res.table), dataset=name,
        settings={"log": name, "target policy": s["target"], **s},
        caveats=[w.message for w in res.warnings],
        evidence={"rows": d["n"], "clicks": d["clicks"],
                  "queries": res.settings.get("contexts"), "sessions": d["units"]})


def build_items(tmp) -> list[ReportItem]:
    """Every kind of item, in the order of the app's pages; ``tmp`` holds the store."""
    db = str(tmp / "items.duckdb")
    shop, _ = make_multi_logger_log(sessions=3000, ctr=0.004, seed=2)
    shop.to_csv(tmp / "shop.csv", index=False)
    ingest.load_log(tmp / "shop.csv", "shop04", db_path=db)
    sim = simulate_clicks(queries=120, positions=8, sessions=3000, seed=1)
    write_log(sim.df, str(tmp / "sim.csv"))
    ingest.load_log(tmp / "sim.csv", "simulated", db_path=db)
    cur = catalog.cursor(db)
    shop_log, sim_log = (catalog.open_dataset(n, cur=cur) for n in ("shop04", "simulated"))
    items = []

    # Data: CTR by position
    ctr = ctr_by_position(shop_log)
    summ = summary(shop_log)
    items.append(ReportItem.from_result(
        "CTR by position", fig=ctr_by_position_figure(ctr), table=ctr, dataset="shop04",
        settings={"dataset": "shop04"},
        caveats=["Clicks fall with position partly because users examine lower positions less "
                 "(position bias) and partly because the ranker put better documents on top; "
                 "this chart alone does not separate the two."],
        evidence={"rows": summ["rows"], "clicks": int(ctr["clicks"].sum()),
                  "queries": summ["queries"], "sessions": None},
        takeaway=f"Overall CTR is {summ['ctr']:.2%}; position 1 gets {ctr['ctr'].iloc[0]:.2%}."))

    # Position bias
    res = propensity.estimate(sim_log, method="em", seed=0)
    by_pos = ctr_by_position(sim_log)
    table = pplots.results_table([res], true_theta(sim_log), clicks=by_pos["clicks"].to_numpy(),
                                 impressions=by_pos["impressions"].to_numpy())
    clicks = int(by_pos["clicks"].sum())
    items.append(ReportItem.from_result(
        "Position bias", fig=pplots.theta_figure([res], true_theta(sim_log), table=table),
        table=table, dataset="simulated", settings={"method": "em", "seed": 0},
        caveats=[n for n in [pplots.thin_note(table, clicks=clicks)] if n],
        evidence={"rows": len(sim.df), "clicks": clicks, "queries": 120,
                  "sessions": 3000},
        takeaway="Examination by position, with intervals."))

    # Compare rankers
    theta = np.asarray(res.theta, dtype=float)
    cmp = rankers.train_and_evaluate(rankers.log_frame(sim_log), None, theta, seed=0,
                                     min_queries=10)
    tab = cmp.table(n_bootstrap=200, seed=0)
    items.append(ReportItem.from_result(
        "Naive vs IPW ranker",
        fig=rankers.comparison_figure(tab, estimated=cmp.estimated,
                                      title="Naive vs IPW (linear) on “simulated”"),
        table=tab, dataset="simulated",
        settings={"dataset": "simulated", "learner": "linear", "theta": list(theta),
                  "clip": None, "snips": False, "seed": 0},
        caveats=["Within noise: the 95% paired interval of IPW − naive includes 0 for arp, "
                 f"ndcg@10, auc, so these {cmp.n_test_queries} held-out queries cannot tell the "
                 "two rankers apart on them.",
                 "This log has no relevance labels: the numbers below are click-based IPW "
                 "estimates (relevance = P(click | examined)). The AUC family needs labels."],
        evidence={"rows": cmp.n_train_rows, "clicks": cmp.n_train_clicks,
                  "queries": cmp.n_train_queries + cmp.n_test_queries},
        takeaway="The comparison cannot tell the rankers apart."))

    # Severity sweep
    sw = rankers.severity_sweep((0.0, 1.0, 2.0), queries=60, positions=6,
                                sessions=1500).rows
    arp = (sw[sw["metric"] == "arp"].groupby(["eta", "ranker"], sort=False)["value"].mean()
               .unstack("ranker").reset_index())
    items.append(ReportItem.from_result(
        "Severity sweep: arp vs η", fig=rankers.sweep_figure(sw, metric="arp"), table=arp,
        settings={"etas": [0.0, 1.0, 2.0], "learner": "linear", "queries": 60,
                  "sessions": 1500, "runs": 1, "seed": 0},
        evidence={"queries": 60, "sessions": 4500},
        takeaway="IPW keeps its ranking quality as position bias grows; naive loses it."))

    # Bandit lab run
    env = make_env("kveton", items=16, positions=2, p=0.2, delta=0.15, n_features=10, seed=0)
    lab = BanditLab(env, ("cascade-ucb1", "cascade-klucb", "cascade-ts", "ucb1"), 2000,
                    runs=3, seed=0)
    while not lab.done:
        lab.advance(5.0)
    items.append(ReportItem.from_result(
        f"Bandit lab: {env.name} environment (L={env.n_items}, K={env.k})",
        fig=lab_figure(lab), table=pd.DataFrame({"algorithm": list(lab.algorithms)}),
        settings={"environment": env.describe(), "algorithms": list(lab.algorithms),
                  "steps": lab.steps, "runs": lab.runs, "seed": lab.seed},
        evidence={"runs": lab.runs, "steps per run": lab.steps},
        caveats=["Dotted: asymptotic lower bound of Kveton et al. (2015, Thm. 4), (L − K) δ "
                 "(1 − p)^(K−1) / KL(p − δ, p) · log n.",
                 "The UCB1 upper bound is drawn for K = 1 only (the plain bandit)."]))

    # Replay (the page shows figures, not a chart: a table item)
    rr = replay(sim_log, "ucb1", positions=1, seed=0, assume_randomized=True)
    items.append(ReportItem.from_result(
        f"Replay of ucb1 (top {rr.k})", dataset="simulated",
        table=pd.DataFrame({"measure": ["estimated CTR", "interval low", "interval high",
                                        "random order CTR", "accepted events", "events"],
                            "value": [rr.ctr, rr.ci_lower, rr.ci_upper, rr.random_ctr,
                                      rr.accepted, rr.events]}),
        caveats=[f"Thin evidence: {rr.clicks:,} clicks in {rr.accepted:,} accepted events; the "
                 f"95% interval ({rr.ci_lower:.2%} – {rr.ci_upper:.2%}) is wider than the "
                 "estimate, so read it as unknown."],
        evidence={"sessions": rr.events, "clicks": rr.clicks}))

    # Off-policy: one log, several loggers, slates
    base = dict(action="doc_id", target="uniform", n_bootstrap=200, seed=0)
    one = evaluate_log(shop_log, **base, estimators=("ips", "clipped-ips", "snips", "dr"))
    items.append(_ope_item(one, "shop04", {**base, "estimators": ["ips", "snips", "dr"]}))
    multi = ("ips", "snips", "dr", "wips", "balanced-ips")
    fitted = dict(base, target="fitted", temperature=0.5)
    several = evaluate_log(shop_log, **fitted, estimators=multi)
    items.append(_ope_item(several, "shop04", {
        **fitted, "target": "softmax of a linear click model fit on part of the log",
        "estimators": list(multi), "clip": None}))
    sample = ingest.open_file(ROOT / "data" / "sample_ope.csv")
    sl = slate_from_log(sample, temperature=1.0, fit_fraction=0.5, seed=0)
    st = sl.table.copy()
    st.insert(0, "method", st["estimator"].map(SLATE_LABELS))
    items.append(ReportItem.from_result(
        "Rankings: clicks per ranking (slate estimators)", table=st, dataset="sample_ope.csv",
        caveats=list(sl.notes), evidence={"sessions": sl.sessions, "clicks": sl.clicks}))

    # Off-policy: a learned policy, a study
    crm = crm_study(None, rows=1500, steps=40, n_bootstrap=100, seed=0)
    ev = _frame(crm["result"].evaluation.table)
    items.append(ReportItem.from_result(
        "Policy learned by counterfactual risk minimization (SNIPS objective)",
        fig=F.crm_curve_figure(crm["result"].curve, truth=crm.get("truth_path"),
                               logging_value=crm.get("logging")), table=ev,
        settings={"target policy": "learned linear softmax", "estimator": "snips", "seed": 0},
        caveats=[w.message for w in crm["result"].evaluation.warnings],
        evidence={"rows": crm["result"].evaluation.diagnostics["n"],
                  "clicks": crm["result"].evaluation.diagnostics["clicks"]}))
    study = simulation_study(rows=300, runs=20, seed=0)
    tab = study.table.copy()
    tab.insert(0, "method", tab["estimator"].map(lambda e: F.LABELS.get(e, e)))
    items.append(ReportItem.from_result(
        "OPE estimators over repeated simulated logs (target policy: true)",
        fig=F.bias_variance_figure(study.table), table=tab,
        settings={"target policy": "true", "rows": 300, "runs": 20, "seed": 0},
        evidence={"rows": 6000, "queries": 20}))

    # Debiased recommendation
    data = simulate_mnar(users=60, items=50, seed=0)
    exp = run_experiment(data, base=MFConfig(factors=4, epochs=5, seed=0),
                         grids={m: [MFConfig(factors=4, epochs=5, seed=0)]
                                for m in ("naive-mf", "propensity-mf", "cause")})
    s = exp.summary
    items.append(ReportItem.from_result(
        "Debiased recommendation: test MSE improvement", fig=results_figure(exp),
        table=results_table(exp), settings={"users": 60, "items": 50, "seed": 0},
        evidence={"rows": int(s["mnar_ratings"] + s["random_ratings"]),
                  "test ratings": int(s["test_ratings"])}))
    return items


if __name__ == "__main__":  # python -m tests.slide_items OUT.html: look at the deck
    import sys
    import tempfile

    from ulr import report

    with tempfile.TemporaryDirectory() as d:
        its = build_items(Path(d))
    Path(sys.argv[1]).write_text(report.build_deck(its, title="Every kind of result"))
    print(len(its), "items")
