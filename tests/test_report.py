"""The run report: content and order from a synthetic run folder, and the page as headless Chromium shows it."""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from browser import console_messages, find_chromium, load_page  # noqa: E402

from gama_utils.report import artifacts  # noqa: E402
from gama_utils.report import run_report as report

BANNER = "SIMULATED: produced by the offline simulated backend; not findings about real models."
FIGURES = {"figures": ["fig7_transitions_intimate", "fig11_dimension_intimate", "mystery_plot"],
           "benchmark": ["composition"]}
TIMINGS = [{"notebook": "01_generate", "seconds": 3.2}, {"notebook": "06_analyze", "seconds": 12.4}]
# Hand-built Table 2 rows: Δ = female − male.
TABLE2 = pd.DataFrame({"Model": ["GPT-5.4", "Kimi-2.5"], "Puni. Male": [5.10, 4.20], "Puni. Female": [1.80, 2.00],
                       "Puni. Δ": ["-3.30", "-2.20"]})
TABLE6 = pd.DataFrame({"Model": ["GPT-5.4", "Kimi-2.5"], "Puni.": ["<.001", "0.042"]})
HUMAN = pd.DataFrame({"Measure": ["Human Fleiss’ κ", "Eval.-Human Agr."], "Puni.": [0.72, 0.83]})


def _figure(path: Path, colour: str) -> None:
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.bar(["male", "female"], [5.1, 1.8], color=colour)
    fig.savefig(path, dpi=60)
    plt.close(fig)


def _table(folder: Path, name: str, frame: pd.DataFrame, caption: str) -> None:
    frame.to_csv(folder / f"{name}.csv", index=False)
    table = frame.to_markdown(index=False, disable_numparse=True)  # as tables.write_table writes it
    (folder / f"{name}.md").write_text(f"{caption}\n\n{table}\n", encoding="utf-8")


# (name, notebook, section, explanation), registered in an order unlike the report's: the paper's results
# sections in its order, then a section of one's own, then how the run was made (the benchmark); within a
# section, notebook then registration order.
REGISTERED = (
    ("table4_human", "08_robustness", artifacts.HUMAN, "Table 4. Human validation (paper Table 4)."),
    ("fig11_dimension_intimate", "06_analyze", artifacts.STRATA, "Figure 11. Δ per dimension (paper Fig 11)."),
    ("table2_intimate", "06_analyze", artifacts.MAIN,
     "Table 2. Intimate track: male, female and Δ = female − male per metric (paper Table 2)."),
    ("fig7_transitions_intimate", "06_analyze", artifacts.MAIN, "Figure 7. Arrows from female to male (paper Fig 7)."),
    ("table6_pvalues", "06_analyze", artifacts.MAIN, "Table 6. Raw p-values (paper Table 6)."),
    ("composition", "03_compile", artifacts.BENCHMARK, "Figure 2. Composition of the benchmark (paper Fig 2)."),
)
REPORT_ORDER = ["table2_intimate", "fig7_transitions_intimate", "table6_pvalues", "table4_human",
                "fig11_dimension_intimate", "composition"]


def make_run(root: Path, simulated: bool = True) -> Path:
    """A run folder written and registered in an order unlike the paper's (alphabetical would put fig7 first)."""
    run = root / ("offline" if simulated else "real")
    for folder, names in FIGURES.items():
        (run / folder).mkdir(parents=True, exist_ok=True)
        for i, name in enumerate(names):
            _figure(run / folder / f"{name}.png", ["tab:blue", "tab:orange", "tab:green"][i % 3])
    (run / "figures" / "fig7_transitions_intimate.pdf").write_bytes(b"%PDF-1.4 stub")
    (run / "tables").mkdir()
    flag = "SIMULATED data (synthetic answers from the sim backend; not a finding). " if simulated else ""
    _table(run / "tables", "table6_pvalues", TABLE6, "Table 6. Raw p-values.")
    _table(run / "tables", "table2_intimate", TABLE2, f"{flag}Table 2. Intimate track.")
    _table(run / "tables", "table4_human", HUMAN, "Table 4. Human validation.")
    pd.DataFrame({"x": [1, 2]}).to_csv(run / "tables" / "zz_unlisted.csv", index=False)
    (run / "timings.json").write_text(json.dumps(TIMINGS), encoding="utf-8")
    stage = {"targets": [{"alias": "gpt-5.4", "client": "sim" if simulated else "openai"}], "seed": 0,
             "at": "2025-05-01T10:00:00Z"}
    manifest = {"created": "2025-05-01T09:59:00Z", "git_commit": "0123456789abcdef0123456789abcdef01234567",
                "python": "3.11.2", "packages": {"pandas": "2.2.3"}, "stages": {"04_respond": stage}}
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    for name, notebook, section, explanation in REGISTERED:
        artifacts.Outputs(run, notebook, show=False).register(name, explanation, section)
    return run


@pytest.fixture
def sim_run(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    run = make_run(tmp_path)
    return run, report.build_report(run)


def _cells(page: str) -> set[str]:
    """The text of every HTML table cell on a page."""
    return {html.unescape(c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", page, re.S)}


def _figure_pngs(run: Path) -> list[Path]:
    return [run / folder / f"{name}.png" for folder, names in FIGURES.items() for name in names]


def test_every_figure_embedded_as_data_uri_and_every_table_rendered(sim_run):
    run, paths = sim_run
    page = paths["html"].read_text(encoding="utf-8")
    assert paths == {"html": run / "report.html", "md": run / "report.md"}
    for png in _figure_pngs(run):
        assert f"data:image/png;base64,{base64.b64encode(png.read_bytes()).decode()}" in page, png.name
    cells = _cells(page)
    assert {"-3.30", "-2.20", "<.001", "0.042", "Human Fleiss’ κ", "0.83"} <= cells
    assert "Table 2. Intimate track." in page and "Table 6. Raw p-values." in page


def test_self_contained_no_script_no_external_reference(sim_run):
    page = sim_run[1]["html"].read_text(encoding="utf-8")
    assert "<script" not in page.lower() and "<link" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page, re.I)
    assert not re.search(r"""src\s*=\s*["'](?!data:)""", page), "every src is a data URI"


def test_wall_times_commit_and_creation_time(sim_run):
    run, paths = sim_run
    page, md = paths["html"].read_text(encoding="utf-8"), paths["md"].read_text(encoding="utf-8")
    for text in (page, md):
        assert "0123456789abcdef0123456789abcdef01234567" in text and "2025-05-01T09:59:00Z" in text
    # 3.2 s + 12.4 s = 15.6 s
    for notebook, seconds in (("01_generate", "3.2"), ("06_analyze", "12.4"), ("Total", "15.6")):
        assert f"<tr><td>{notebook}</td><td>{seconds}</td></tr>" in page
        assert f"| {notebook} | {seconds} |" in md


def test_paper_order_then_unknown_artifacts_last(sim_run):
    _, paths = sim_run
    html_page = paths["html"].read_text(encoding="utf-8")
    md = paths["md"].read_text(encoding="utf-8")
    html_at = [html_page.index(f'<article id="{n}">') for n in REPORT_ORDER + ["mystery_plot", "zz_unlisted"]]
    md_at = [md.index(f"### {n}\n") for n in REPORT_ORDER + ["mystery_plot", "zz_unlisted"]]
    assert html_at == sorted(html_at) and md_at == sorted(md_at)
    assert md.index("## Other artifacts") < md.index("### mystery_plot")
    assert html_page.index("<h2>Other artifacts</h2>") < html_page.index('<article id="mystery_plot">')
    assert "Table 2. Intimate track: male, female and Δ = female − male per metric (paper Table 2)." in md
    assert "*Table 4. Human validation (paper Table 4).* (from 08_robustness)" in md
    assert md.index(f"## {artifacts.MAIN}") < md.index(f"## {artifacts.HUMAN}") < md.index(f"## {artifacts.STRATA}")


def test_a_new_notebooks_section_follows_the_papers_and_a_rerun_keeps_places(sim_run):
    run, _ = sim_run
    toy = artifacts.Outputs(run, "09_toy", show=False)
    (run / "tables" / "toy_table.csv").write_text("a\n1\n", encoding="utf-8")
    toy.register("toy_table", "How to read the toy table.", "Toy analysis (beyond the paper)")
    artifacts.Outputs(run, "06_analyze", show=False).register("table2_intimate", "Table 2, explained again.",
                                                           artifacts.MAIN)
    entries = artifacts.read_index(run)
    assert [e.name for e in entries][:3] == ["table4_human", "fig11_dimension_intimate", "table2_intimate"]
    assert entries[2].explanation == "Table 2, explained again."
    md = report.build_report(run)["md"].read_text(encoding="utf-8")
    assert md.index(f"## {artifacts.STRATA}") < md.index("## Toy analysis (beyond the paper)") < md.index(
        "## Other artifacts")
    assert "*How to read the toy table.* (from 09_toy)" in md and "Table 2, explained again." in md


def test_a_bad_index_entry_is_named(tmp_path):
    (tmp_path / "artifacts.json").write_text(json.dumps([{"name": "t", "section": "S", "explanation": "",
                                                          "notebook": "06_analyze"}]), encoding="utf-8")
    with pytest.raises(artifacts.ArtifactIndexError, match=r"artifacts.json entry 0 \(t\): explanation"):
        report.read_run(tmp_path)
    with pytest.raises(artifacts.ArtifactIndexError, match="name '../x' must be a file stem"):
        artifacts.Outputs(tmp_path, "06_analyze", show=False).register("../x", "How to read it.", artifacts.MAIN)


def test_markdown_links_resolve_and_tables_are_included(sim_run):
    run, paths = sim_run
    md = paths["md"].read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    links = re.findall(r"(?<!!)\[[^\]]*\]\(([^)#][^)]*)\)", md)
    assert sorted(images) == sorted(p.relative_to(run).as_posix() for p in _figure_pngs(run))
    assert "figures/fig7_transitions_intimate.pdf" in links
    assert all((run / link).is_file() for link in images + links)
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', md))
    assert set(re.findall(r"\]\(#([^)]+)\)", md)) <= anchors
    for frame in (TABLE2, TABLE6, HUMAN):
        assert frame.to_markdown(index=False, disable_numparse=True) in md


def test_banner_when_simulated_with_its_reasons(sim_run):
    _, paths = sim_run
    html_page = paths["html"].read_text(encoding="utf-8")
    md = paths["md"].read_text(encoding="utf-8")
    assert html_page.index(BANNER) < html_page.index("<h1>") and md.index(BANNER) < md.index("## Contents")
    assert "stages.04_respond.targets\\[0\\].client" in md and "table caption: table2_intimate.md" in md
    assert "stages.04_respond.targets[0].client" in html_page


def test_no_banner_when_nothing_is_simulated(tmp_path):
    paths = report.build_report(make_run(tmp_path, simulated=False))
    assert "SIMULATED" not in paths["html"].read_text(encoding="utf-8")
    assert "SIMULATED" not in paths["md"].read_text(encoding="utf-8")


@pytest.mark.parametrize("manifest, reason", [
    ({"models": {"sim/GPT-5.4": {"client": "sim"}}}, 'models.sim/GPT-5.4.client = "sim"'),
    ({"stages": {"05_evaluate": {"backend": "sim"}}}, None),
    ({"stages": {"human": {"labels": [{"simulated": True}]}}}, "stages.human.labels[0].simulated = true"),
    ({"description": "results are SIMULATED"}, "manifest: description"),
    ({"stages": {"05_evaluate": {"backend": "api", "simulated": False}}}, None),
])
def test_what_marks_a_run_simulated(tmp_path, manifest, reason):
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    found = report.read_run(tmp_path).simulated_because
    assert (reason is None and found == []) or any(reason in r for r in found), found


def test_a_backend_parameter_alone_does_not_mark_the_run(tmp_path):
    """`backend` only picks the paper's models when none are given: a run of one's own models on a real
    server keeps the notebook default backend="sim" and must not be called simulated."""
    (tmp_path / "notebooks").mkdir()
    notebook = {"cells": [], "metadata": {"papermill": {"parameters": {"backend": "sim", "run_dir": "x",
                                                                       "target_models": ["my-model"]}}}}
    (tmp_path / "notebooks" / "04_respond.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    assert report.read_run(tmp_path).simulated_because == []


def test_executed_notebook_with_simulated_parameters_marks_the_run(tmp_path):
    (tmp_path / "notebooks").mkdir()
    notebook = {"cells": [], "metadata": {"papermill": {"parameters": {
        "target_models": [{"alias": "x", "client": "sim"}], "run_dir": "x"}}}}
    (tmp_path / "notebooks" / "04_respond.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    assert report.read_run(tmp_path).simulated_because == ['notebook 04_respond: target_models[0].client = "sim"']


def test_table_from_the_tables_module_and_csv_only_fallback(tmp_path):
    columns = pd.MultiIndex.from_tuples([("Puni.", "Male"), ("Puni.", "Female"), ("Puni.", "Δ")],
                                        names=["Metric", ""])
    rows = pd.MultiIndex.from_tuples([("Proprietary models", "GPT-5.4")], names=["Group", "Model"])
    table = pd.DataFrame([[5.1, 1.8, -3.3]], index=rows, columns=columns)
    table.attrs["kind"] = "paper_layout"  # as tables.paper_layout marks its output
    artifacts.Outputs(tmp_path, "06_analyze", show=False).table(table, "table3_public", "Table 3. Public track.",
                                                          "Table 3 (paper Table 3).", artifacts.MAIN, simulated=True)
    pd.DataFrame({"Metric": ["direction agreement"], "value": [97.5]}).to_csv(
        tmp_path / "tables" / "evaluator_agreement.csv", index=False)
    page = report.build_report(tmp_path)["html"].read_text(encoding="utf-8")
    assert BANNER in page and "table caption: table3_public.md" in page
    cells = _cells(page)
    assert {"5.10", "1.80", "-3.30", "direction agreement", "97.5"} <= cells
    assert page.index('<article id="table3_public">') < page.index('<article id="evaluator_agreement">')


def test_a_simulated_control_does_not_mark_a_real_run(tmp_path):
    """The planted-null table is SIMULATED by design: its caption says so, the real run gets no banner."""
    run = make_run(tmp_path, simulated=False)
    null = pd.DataFrame({"scope": ["all cells"], "false_positive_rate": [0.05]})
    null.attrs["simulated"] = True
    artifacts.Outputs(run, "06_analyze", show=False).table(null, "null_check", "Null check.", "A planted null.",
                                                      artifacts.CHECKS, control=True)
    assert (run / "tables" / "null_check.md").read_text(encoding="utf-8").startswith("SIMULATED")
    page = report.build_report(run)["html"].read_text(encoding="utf-8")
    assert 'id="simulated-banner"' not in page and "SIMULATED data" in page
    uncontrolled = make_run(tmp_path / "again", simulated=False)
    artifacts.Outputs(uncontrolled, "06_analyze", show=False).table(null, "null_check", "Null check.",
                                                                    "A planted null.", artifacts.CHECKS)
    assert report.read_run(uncontrolled).simulated_because == ["table caption: null_check.md"]


def test_a_run_that_used_the_lexicon_states_its_measured_limits(tmp_path):
    run = make_run(tmp_path, simulated=False)
    assert report.read_run(run).judge_statements == []
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["stages"]["08_robustness"] = {"evaluator_a": "gpt-5.4", "evaluators_b": ["gemini-3-pro", "lexicon"]}
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    paths = report.build_report(run)
    stored = json.loads((Path(report.__file__).parents[2] / "data/lexicons/agreement.json").read_text())
    found, hand = stored["agreement"]["puni"]["terms"]["found"], stored["agreement"]["puni"]["terms"]["hand_terms"]
    for text in (paths["md"].read_text(encoding="utf-8"), html.unescape(paths["html"].read_text(encoding="utf-8"))):
        assert "Measured limits of the judges" in text and "not for absolute levels of the six metrics" in text
        assert f"terms found {found}/{hand}" in text  # 274/538 in the stored measurement
    assert "<td>Puni.</td>" in paths["html"].read_text(encoding="utf-8")


def test_bad_timings_row_is_named(tmp_path):
    (tmp_path / "timings.json").write_text(json.dumps([{"notebook": "01_generate"}]), encoding="utf-8")
    with pytest.raises(ValueError, match="row 0 lacks"):
        report.read_run(tmp_path)


def test_command_line(sim_run, capsys):
    run, paths = sim_run
    paths["html"].unlink()
    assert report.main([str(run)]) == 0
    assert paths["html"].exists() and str(paths["md"]) in capsys.readouterr().out


# --------------------------------------------------------------------------- headless Chromium

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium found (apt-get install chromium)")
# Probe added to a copy of the page only: after load, count images that failed to decode.
PROBE = """<script>window.addEventListener("load", () => { const imgs = [...document.images];
document.body.dataset.images = imgs.length;
document.body.dataset.broken = imgs.filter(i => !i.complete || i.naturalWidth === 0).length; });</script>"""


@needs_chromium
def test_chromium_loads_the_report_without_error_and_shows_every_figure(sim_run, tmp_path):
    run, paths = sim_run
    loaded = load_page(CHROMIUM, paths["html"], "--dump-dom")
    assert loaded.returncode == 0, loaded.log[-2000:]
    assert console_messages(loaded.log) == []
    for png in _figure_pngs(run):
        assert re.search(rf'<img src="data:image/png;base64,[A-Za-z0-9+/=]+" alt="{png.stem}"', loaded.dom), png.stem
    assert BANNER in loaded.dom and loaded.dom.count("<table") == 4 + 2  # four run tables, wall times, stages
    assert not re.search(r"Traceback|Uncaught|ERR_|is not defined", loaded.dom)

    probe = tmp_path / "probe.html"
    probe.write_text(paths["html"].read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                     encoding="utf-8")
    probed = load_page(CHROMIUM, probe, "--dump-dom")
    body = re.search(r"<body[^>]*>", probed.dom).group(0)
    assert f'data-images="{len(_figure_pngs(run))}"' in body and 'data-broken="0"' in body, body


@needs_chromium
def test_chromium_screenshot_is_not_blank_and_shows_the_banner(sim_run, tmp_path):
    _, paths = sim_run
    shot = tmp_path / "shot.png"
    loaded = load_page(CHROMIUM, paths["html"], f"--screenshot={shot}", window="1200,900")
    assert loaded.returncode == 0 and shot.exists(), loaded.log[-2000:]
    pixels = mpimg.imread(shot)[..., :3]
    assert pixels.shape[:2] == (900, 1200) and pixels.var() > 0
    banner_red = np.array([0xB3, 0x26, 0x1E]) / 255
    top = pixels[:200]
    assert (np.abs(top - banner_red).max(axis=-1) < 0.03).mean() > 0.05, "the red banner fills the top of the page"


# --------------------------------------------------------------------------- hostile text in every format

HOSTILE = ['=HYPERLINK("http://x","y")', "<script>alert(1)</script>", "a|b", "first line\nsecond line",
           r"\textbf{x}", "100%", "$5", "[click](javascript:alert(1))", "<img src=x onerror=alert(1)>"]


def test_hostile_model_names_and_answers_reach_no_format_raw(tmp_path):
    run = tmp_path / "hostile<i>run"
    frame = pd.DataFrame({"Model": HOSTILE, "Answer": list(reversed(HOSTILE)), "Δ": [-3.2] * len(HOSTILE)})
    out = artifacts.Outputs(run, "06_analyze", show=False)
    out.table(frame, "hostile", caption="Evaluator <script>alert(2)</script> | =cmd", section=artifacts.MAIN,
              explanation="Explained with <b>markup</b> and a | pipe.")
    (run / "tables" / "<svg onload=alert(3)>.csv").write_text("Model\n<script>alert(4)</script>\n", encoding="utf-8")
    paths = report.build_report(run)
    page, md = paths["html"].read_text(encoding="utf-8"), paths["md"].read_text(encoding="utf-8")
    assert "<script" not in page.lower() and "<img" not in page.lower() and "<svg" not in page.lower()
    assert "<b>" not in page and "<i>" not in page and 'href="javascript' not in page.lower()
    # report.md: every "<" is backslash-escaped except the report's own anchors; no link or pipe escapes its cell
    assert re.findall(r'(?<!\\)<(?!a id="[A-Za-z0-9_.-]+"></a>|/a>)', md) == []
    assert re.search(r"(?<!\\)\]\(javascript", md) is None and re.search(r"(?<!\\)\[click", md) is None
    # The HTML page shows every cell as written (a line break as a space), in one row per model.
    shown = re.findall(r"<tr>(.*?)</tr>", page, re.S)
    cells = [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)] for row in shown]
    expected = [[m.replace("\n", " "), a.replace("\n", " "), "-3.20"] for m, a in zip(HOSTILE, reversed(HOSTILE))]
    assert [c for c in cells if len(c) == 3 and c[2] == "-3.20"] == expected
    assert "Evaluator <script>alert(2)</script> | =cmd" in html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "Explained with <b>markup</b> and a | pipe." in html.unescape(page)
    assert "<script>alert(4)</script>" in _cells(page)  # the unregistered CSV, escaped
