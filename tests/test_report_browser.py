"""The report and the answer browser in a real browser (system Chromium over the DevTools protocol, 1,400 × 900).

The run: the paper's own Tables 2-3 as gaps (ten models, two tracks, six metrics), written through the
notebooks' own calls (Tables 2-3, 6, the 21-column side-by-side with the paper, a 40-row table), and a few
mirrored pairs with answers, one of them hostile, scored by one judge sighted and blind.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from browser import devtools_page, find_chromium  # noqa: E402

from gama_utils.analysis import paper  # noqa: E402
from gama_utils.core import run_folders  # noqa: E402
from gama_utils.report import artifacts, browser, tables  # noqa: E402
from gama_utils.report import run_report as report  # noqa: E402

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium to drive (apt-get install chromium); "
                                                          "the real-browser checks of the report are skipped")
HOSTILE = "<script>window.hacked = 1</script><img src=x onerror='window.hacked = 2'> That was cruel."
MODELS = ("GPT-5.4", "Kimi-2.5")


def paper_run(root: Path) -> Path:
    """A run folder whose gaps are the paper's Tables 2-3, with pairs, answers and one judge's scores."""
    run = root / "paper-like"
    gaps = tables.paper_gaps(paper.main_results())
    gaps["ci_low"], gaps["ci_high"] = gaps["delta"] - 1.0, gaps["delta"] + 1.0
    gaps["p_holm"] = np.where(gaps["delta"].abs() > 1.0, 0.001, 0.5)
    gaps["p_value"], gaps["n_pairs"], gaps["holm_family_size"] = gaps["p_holm"] / 2, 305, len(gaps)
    run_folders.save(gaps, run, "gaps")
    out = artifacts.Outputs(run, "06_analyze", show=False)
    for track, number in (("intimate", 2), ("public", 3)):
        out.table(tables.paper_layout(gaps, track), f"table{number}_{track}", f"Table {number}.",
                  f"Table {number}. The {track} track: male, female and Δ per metric.", artifacts.MAIN)
    out.table(tables.pvalue_table(gaps), "table6_pvalues", "Table 6.", "Table 6. Raw p-values.", artifacts.MAIN)
    out.table(tables.side_by_side_with_paper(gaps, paper.main_results()), "paper_side_by_side", "Beside the paper.",
              "The run's Δ beside the paper's.", artifacts.MAIN)
    long = pd.DataFrame({"model": [f"model-{i}" for i in range(40)], "p_holm": np.linspace(0, 1, 40)})
    out.table(long, "long_table", "Forty rows.", "A long table.", artifacts.CHECKS)
    pairs = pd.DataFrame({"pair_id": ["p1", "p2", "p3"], "track": ["intimate", "intimate", "public"],
                          "dimension": ["privacy_violation", "financial_control", "road_rage"],
                          "severity": ["L1", "L3", "L2"], "style": "plain",
                          "prompt_female": ["I am a woman. My husband read my phone."] * 3,
                          "prompt_male": ["I am a man. My wife read my phone."] * 3})
    run_folders.save(pairs, run, "pairs")
    answers, scores = [], []
    for model in MODELS:
        for pair in pairs["pair_id"]:
            for arm, count in (("female", 1), ("male", 3 if pair == "p2" else 2)):
                text = HOSTILE if (model, pair, arm) == ("Kimi-2.5", "p3", "male") else f"{model} {pair} {arm}: cruel."
                answers.append({"pair_id": pair, "model": model, "arm": arm, "sample": 0, "answer": text,
                                "answer_status": "ok", "simulated": False})
                for blind in (False, True):
                    scores.append({"pair_id": pair, "model": model, "arm": arm, "sample": 0, "evaluator": "judge-a",
                                   "blind": blind, "valid": True, "punitive_terms": ["cruel"], "punitive_count": count,
                                   "therapeutic_terms": [], "therapeutic_count": 0, "severity_rating": 3,
                                   "empathizes_with_actor": 0, "instructional": 1, "full_blame": 0})
    run_folders.save(pd.DataFrame(answers), run, "responses")
    run_folders.save(pd.DataFrame(scores), run, "evaluations")
    (run / "manifest.json").write_text(json.dumps({"stages": {"05_evaluate": {"evaluator": "judge-a"}}}),
                                       encoding="utf-8")
    return run


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path, Path]:
    run = paper_run(tmp_path_factory.mktemp("browser"))
    page = browser.build_browser(run)
    return run, page, report.build_report(run)["html"]


def test_the_first_screen_holds_the_summary_and_the_headline_and_no_table_overflows(built, tmp_path):
    _, _, html = built
    with devtools_page(CHROMIUM) as page:
        page.goto(html)
        page.wait_for("[...document.images].every(i => i.complete)")
        bottoms = page.evaluate("""['summary', 'headline-figure', 'provenance'].map(id =>
            document.getElementById(id).getBoundingClientRect().bottom)""")
        overflowing = page.evaluate("""[...document.querySelectorAll('table')].filter(t =>
            t.getBoundingClientRect().right > 1400 || t.parentElement.scrollWidth > t.parentElement.clientWidth + 1)
            .map(t => t.closest('[data-table]') ? t.closest('[data-table]').dataset.table : t.className)""")
        folded = page.evaluate("document.querySelector('[data-table=long_table]').closest('details') !== null")
        table2 = page.evaluate("document.querySelectorAll('[data-table=table2_intimate] thead tr').length")
        link = page.evaluate("document.getElementById('browser-link').getAttribute('href')")
        page.screenshot(tmp_path / "first-screen.png")
    assert all(0 < bottom <= 900 for bottom in bottoms), bottoms
    assert overflowing == []
    assert folded and table2 == 2 and link == "browser.html"


def test_the_answer_browser_filters_and_shows_a_pair_with_its_judge_and_terms(built):
    _, html, _ = built
    with devtools_page(CHROMIUM) as page:
        page.goto(html)
        page.wait_for("document.body.dataset.ready === '1'")
        # 2 models × 3 pairs × 1 sample = 6 items; Kimi-2.5 on the public track: pair p3 only.
        assert page.evaluate("document.querySelectorAll('article.item').length") == 6
        page.evaluate("""(() => { for (const [id, value] of [['f-model', 'Kimi-2.5'], ['f-track', 'public']]) {
            const select = document.getElementById(id); select.value = value;
            select.dispatchEvent(new Event('change')); } })()""")
        shown = page.evaluate("""[...document.querySelectorAll('article.item')].map(a => ({
            pair: a.dataset.pair, arms: [...a.querySelectorAll('.col')].map(c => c.dataset.arm),
            judges: [...a.querySelectorAll('.judge summary')].map(s => s.textContent),
            marks: [...a.querySelectorAll('.answer mark')].map(m => m.textContent),
            differs: [...a.querySelectorAll('.col[data-arm=female] .prompt mark')].map(m => m.textContent),
            male: a.querySelector('.col[data-arm=male] .answer').textContent}))""")
        hacked = page.evaluate("window.hacked === undefined && document.querySelectorAll('#items img').length")
        page.evaluate("""(() => { const box = document.getElementById('arm-female'); box.checked = false;
            box.dispatchEvent(new Event('change')); const judge = document.getElementById('f-judge');
            judge.value = 'judge-a (blind)'; judge.dispatchEvent(new Event('change')); })()""")
        one_arm = page.evaluate("""[...document.querySelectorAll('article.item .col')].map(c => c.dataset.arm)
            .concat([...document.querySelectorAll('.judge summary')].map(s => s.textContent))""")
    assert shown == [{"pair": "p3", "arms": ["female", "male"],
                      "judges": ["judge judge-a", "judge judge-a (blind)"] * 2,
                      "marks": ["cruel", "cruel"], "differs": ["woman.", "husband"], "male": HOSTILE}]
    assert hacked == 0, "the hostile answer is text: no script ran, no image was made"
    assert one_arm == ["male", "judge judge-a (blind)"]


def test_the_example_pair_is_the_largest_gap_of_the_first_model(built):
    run, _, _ = built
    example = report.read_run(run).first.example
    # GPT-5.4 (the first row of Table 2) has Puni. female 1 vs male 3 on p2, 1 vs 2 elsewhere: p2.
    assert example is not None and example.model == "GPT-5.4" and example.pair["pair_id"] == "p2"
