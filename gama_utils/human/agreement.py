"""Agreement (paper §4.5, Table 4): Fleiss' κ, majority vote, evaluator directions and agreement, Table 4.

Both figures carry a 95% interval in `validation_summary`: Fleiss' κ by a percentile bootstrap over
the items (the raters' label counts resampled, vectorised), the evaluator-human agreement by
Clopper-Pearson over the items with a majority; Table 4 states them in its notes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from statsmodels.stats import inter_rater
from statsmodels.stats.proportion import proportion_confint

from gama_utils.analysis import paper
from gama_utils.core.metrics import metric
from gama_utils.core.schema import require
from gama_utils.human.scale import framing_keys, framings

NO_MAJORITY = "none"
KAPPA_ROW = "Human Fleiss' κ"
AGREEMENT_ROW = "Eval.-Human Agr."


def fleiss_kappa(ratings: pd.DataFrame | np.ndarray) -> float:
    """Fleiss' κ of an items × raters table of categorical labels (statsmodels); NaN if only one label occurs."""
    table = np.asarray(ratings, dtype=object)
    if pd.isna(table).any():
        raise ValueError("fleiss_kappa: every rater must label every item (found missing labels)")
    counts, categories = inter_rater.aggregate_raters(table)
    if len(categories) < 2:
        return float("nan")
    return float(inter_rater.fleiss_kappa(counts, method="fleiss"))


def fleiss_kappa_rows(counts: np.ndarray) -> np.ndarray:
    """Fleiss' κ of each of a stack of (items × categories) count tables (shape k × items × categories), every item
    rated by the same number of raters; NaN where only one category occurs."""
    counts = np.asarray(counts, dtype=float)
    raters = counts[0, 0].sum()
    items = counts.shape[1]
    per_item = ((counts ** 2).sum(axis=2) - raters) / (raters * (raters - 1))
    shares = counts.sum(axis=1) / (items * raters)
    expected = (shares ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected < 1, (per_item.mean(axis=1) - expected) / (1 - expected), np.nan)


def fleiss_kappa_interval(ratings: pd.DataFrame | np.ndarray, n_boot: int = 2000, seed: int = 0,
                          level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of Fleiss' κ, resampling items (rows of an items × raters label table)."""
    counts, _ = inter_rater.aggregate_raters(np.asarray(ratings, dtype=object))
    rows = np.random.default_rng(seed).integers(0, counts.shape[0], size=(n_boot, counts.shape[0]))
    kappas = fleiss_kappa_rows(counts[rows])
    kappas = kappas[np.isfinite(kappas)]
    if not kappas.size:
        return float("nan"), float("nan")
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(kappas, [tail, 100 - tail])
    return float(low), float(high)


def fleiss_kappa_by_framing(labels: pd.DataFrame) -> pd.Series:
    """Fleiss' κ per framing dimension over the items every annotator labelled."""
    require(labels, ("annotator", "item_id", "framing", "label"), "labels")
    kappas = {}
    for k in framing_keys():
        wide = labels[labels["framing"] == k].pivot(index="item_id", columns="annotator", values="label")
        if wide.shape[1] < 2:
            raise ValueError(f"Fleiss' κ needs at least two annotators; framing {k} has {wide.shape[1]}")
        kappas[k] = fleiss_kappa(wide)
    return pd.Series(kappas, name="fleiss_kappa")


def majority_vote(labels: pd.DataFrame) -> pd.DataFrame:
    """Majority label per item × framing: the label chosen by more than half the annotators, else 'none'."""
    require(labels, ("annotator", "item_id", "framing", "label"), "labels")

    def vote(group: pd.Series) -> str:
        counts = group.value_counts()
        return str(counts.index[0]) if counts.iloc[0] * 2 > len(group) else NO_MAJORITY

    grouped = labels.groupby(["item_id", "framing"])["label"]
    return pd.DataFrame({"majority": grouped.agg(vote), "n_annotators": grouped.size()}).reset_index()


def evaluator_direction(score_a: float, score_b: float) -> str:
    """A if the evaluator scored response A higher, B if lower, Tie if equal (counts or 0/1 indicators)."""
    if pd.isna(score_a) or pd.isna(score_b):
        raise ValueError(f"evaluator_direction: missing score ({score_a!r}, {score_b!r})")
    return "A" if score_a > score_b else "B" if score_a < score_b else "Tie"


def evaluator_directions(key: pd.DataFrame) -> pd.DataFrame:
    """Evaluator-derived A/B/Tie per item × framing: item_id, framing, score_a, score_b, evaluator."""
    require(key, ("item_id", *(f"{k}_{s}" for k in framing_keys() for s in ("a", "b"))), "key")
    rows = [{"item_id": row["item_id"], "framing": k, "score_a": row[f"{k}_a"], "score_b": row[f"{k}_b"],
             "evaluator": evaluator_direction(float(row[f"{k}_a"]), float(row[f"{k}_b"]))}
            for _, row in key.iterrows() for k in framing_keys()]
    return pd.DataFrame(rows, columns=["item_id", "framing", "score_a", "score_b", "evaluator"])


def evaluator_human_agreement(majority: pd.DataFrame, directions: pd.DataFrame) -> pd.DataFrame:
    """Per framing: share of items with a human majority whose evaluator direction equals it.

    Columns: framing, agreement, n_items, n_with_majority, n_no_majority.
    """
    both = majority.merge(directions[["item_id", "framing", "evaluator"]], on=["item_id", "framing"],
                          how="inner", validate="one_to_one")
    rows = []
    for k in framing_keys():
        frame = both[both["framing"] == k]
        decided = frame[frame["majority"] != NO_MAJORITY]
        agreement = float((decided["majority"] == decided["evaluator"]).mean()) if len(decided) else float("nan")
        rows.append({"framing": k, "agreement": agreement, "n_items": len(frame),
                     "n_with_majority": len(decided), "n_no_majority": len(frame) - len(decided)})
    return pd.DataFrame(rows)


def validation_summary(labels: pd.DataFrame, key: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per framing: fleiss_kappa, agreement, n_items, n_with_majority, n_no_majority, n_annotators, simulated, and
    the 95% intervals kappa_ci_low/high (bootstrap over items) and agreement_ci_low/high (Clopper-Pearson)."""
    summary = evaluator_human_agreement(majority_vote(labels), evaluator_directions(key))
    summary.insert(1, "fleiss_kappa", summary["framing"].map(fleiss_kappa_by_framing(labels)))
    intervals = {k: fleiss_kappa_interval(labels[labels["framing"] == k].pivot(index="item_id", columns="annotator",
                                                                               values="label"), n_boot, seed)
                 for k in summary["framing"]}
    summary["kappa_ci_low"] = summary["framing"].map(lambda k: intervals[k][0])
    summary["kappa_ci_high"] = summary["framing"].map(lambda k: intervals[k][1])
    exact = [proportion_confint(round(a * n), n, alpha=0.05, method="beta") if n else (np.nan, np.nan)
             for a, n in zip(summary["agreement"], summary["n_with_majority"])]
    summary["agreement_ci_low"], summary["agreement_ci_high"] = [e[0] for e in exact], [e[1] for e in exact]
    summary["n_annotators"] = labels["annotator"].nunique()
    summary["simulated"] = bool(labels["simulated"].any()) if "simulated" in labels else False
    summary["responses_simulated"] = bool(key["simulated"].any()) if "simulated" in key else False
    return summary


def paper_table4() -> pd.DataFrame:
    """The paper's Table 4 (data/paper/table4.csv) in the `table4` layout."""
    reported = paper.human_validation()
    rows = {"fleiss_kappa": KAPPA_ROW, "evaluator_human_agreement": AGREEMENT_ROW}
    table = reported.assign(measure=reported["measure"].map(rows),
                            metric=reported["metric"].map(lambda k: metric(k).label))
    return table.pivot(index="measure", columns="metric", values="value").reindex(
        index=list(rows.values()), columns=[f.label for f in framings()])


def table4(summary: pd.DataFrame, with_paper: bool = False) -> pd.DataFrame:
    """Table 4 layout: rows Human Fleiss' κ and Eval.-Human Agr., columns Puni., Ther., Instr., Full-Bl.

    With `with_paper`, each row appears twice (this run, paper) under a (measure, source) index.
    The caption (`.attrs["caption"]`) and the index name say when annotators were simulated.
    """
    require(summary, ("framing", "fleiss_kappa", "agreement"), "summary")
    by_framing = summary.set_index("framing")
    columns = [f.label for f in framings()]
    simulated = bool(summary.get("simulated", pd.Series([False])).any())
    responses_simulated = bool(summary.get("responses_simulated", pd.Series([False])).any())
    run = pd.DataFrame([[by_framing.loc[f.key, "fleiss_kappa"] for f in framings()],
                        [by_framing.loc[f.key, "agreement"] for f in framings()]],
                       index=[KAPPA_ROW, AGREEMENT_ROW], columns=columns)
    source = "this run (SIMULATED annotators)" if simulated else "this run"
    if with_paper:
        reported = paper_table4()
        index = [(measure, src) for measure in run.index for src in (source, "paper (Tab. 4)")]
        table = pd.DataFrame([run.loc[m] if src == source else reported.loc[m, columns] for m, src in index],
                             index=pd.MultiIndex.from_tuples(index, names=["measure", "source"]))
    else:
        table = run
        table.index.name = "Measure (SIMULATED annotators)" if simulated else "Measure"
    n_items = int(by_framing["n_items"].max()) if "n_items" in by_framing else None
    notes = []
    if {"kappa_ci_low", "agreement_ci_low"} <= set(by_framing.columns):
        shown = "; ".join(f"{f.label} κ {row['kappa_ci_low']:.2f} to {row['kappa_ci_high']:.2f}, agreement "
                          f"{row['agreement_ci_low']:.0%} to {row['agreement_ci_high']:.0%}"
                          for f in framings() for row in [by_framing.loc[f.key]])
        table.attrs["notes"] = [f"95% intervals of this run (κ: bootstrap over the items; agreement: Clopper-Pearson "
                                f"over the items with a majority): {shown}."]
    if simulated:
        notes.append("SIMULATED annotators: labels drawn from the evaluator scores plus noise; "
                     "this exercises the pipeline and is not a finding")
    if responses_simulated:
        notes.append("responses and scores from the simulated backend")
    table.attrs["caption"] = ("Table 4: Human validation of evaluator-based framing metrics"
                              + (f" ({n_items} items)" if n_items else "")
                              + ("".join(f". {note}" for note in notes)) + ".")
    table.attrs["simulated"] = simulated
    return table
