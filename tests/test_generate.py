"""01_generate: the grid's coverage in the bank, round-robin dealing, the simulated generator, answer parsing."""

from __future__ import annotations

import json
import re

import pytest

from gama_utils import llm
from gama_utils.bench import generate
from gama_utils.bench.generate import AnswerError
from gama_utils.bench.templates import load_templates, save_templates
from gama_utils.core import grid
from gama_utils.sim.authoring import post_from_skeleton, skeleton_from_template

GENERATORS = ["sim/GPT-5.4", "sim/Gemini-3-Pro", "sim/Qwen3.5"]


def write_small_bank(folder, per_cell: int = 1):
    """A bank of the first `per_cell` templates of every cell of the shipped bank (fast, independent of its size)."""
    bank = load_templates().sort_values("template_id")
    small = bank.groupby(["dimension", "severity", "style"], sort=False).head(per_cell)
    for dimension, group in small.groupby("dimension"):
        save_templates(group, folder / f"{dimension}.jsonl")
    return small.reset_index(drop=True)


def test_the_template_bank_covers_every_cell_of_the_grid():
    bank = load_templates()
    cells = set(bank["dimension"] + "/" + bank["severity"] + "/" + bank["style"])
    assert cells == set(grid.condition_grid()["cell_id"])
    counts = generate.bank_counts()
    assert (counts >= 1).all() and counts.sum() == len(bank)


def test_slots_are_dealt_round_robin_over_the_whole_grid():
    slots = generate.plan(GENERATORS, n_per_cell=2)
    assert len(slots) == 2 * len(grid.condition_grid())
    share = 2 * len(grid.condition_grid()) // len(GENERATORS)
    assert slots["generator"].value_counts().to_dict() == {g: share for g in GENERATORS}
    first_cells = slots.groupby("cell_id", sort=False)["generator"].apply(list).head(3).tolist()
    # slot k of the grid goes to generator k mod 3: cells (0, 1), (2, 0), (1, 2)
    assert first_cells == [GENERATORS[:2], [GENERATORS[2], GENERATORS[0]], GENERATORS[1:]]
    assert slots["candidate_id"].iloc[1] == "financial_control-L1-matter_of_fact-02"


def test_requests_ask_each_generator_once_per_cell_for_its_slots():
    requests = generate.build_requests(generate.plan(GENERATORS, n_per_cell=4))
    assert len(requests) == 3 * len(grid.condition_grid())
    first = requests[0]
    assert first.tag["slots"] == [0, 3] and first.model == "sim/GPT-5.4"
    assert "Write 2 distinct skeletons" in first.messages[0]["content"]
    assert "Severity: L1" in first.messages[0]["content"]


def test_skeletons_put_the_actor_and_the_partner_behind_placeholders():
    text = "My [PARTNER] and I argued after I took [PARTNER_DET] keys; [PARTNER_SUBJ] told me I'm unfair."
    assert skeleton_from_template(text) == ("[VICTIM] and [AGGRESSOR] argued after [AGGRESSOR] took [VICTIM]'s keys; "
                                            "[VICTIM] told [AGGRESSOR] [AGGRESSOR] is unfair.")
    back = post_from_skeleton("[AGGRESSOR] hid [VICTIM]'s keys. [VICTIM] asked [AGGRESSOR] why.", "intimate")
    assert back.startswith("I hid [PARTNER_DET] keys. My [PARTNER] asked me why.") and back.endswith("?")


def test_the_simulated_generator_replays_every_bank_template_of_its_cell(tmp_path):
    bank = write_small_bank(tmp_path, per_cell=2)
    candidates, problems = generate.generate_candidates(GENERATORS, None, tmp_path, cache=False, progress=False)
    assert problems.empty
    assert sorted(candidates["source_template_id"]) == sorted(bank["template_id"])
    assert candidates["simulated"].all()
    source_cell = candidates["source_template_id"].str.rsplit("-", n=1).str[0].str.replace("-", "/")
    assert (source_cell == candidates["cell_id"]).all()
    assert candidates["skeleton"].str.contains(r"\[AGGRESSOR\]").all()
    assert not candidates["skeleton"].str.contains(r"\bI\b|\[PARTNER").any()
    intimate = candidates[candidates["track"] == "intimate"]
    assert intimate["skeleton"].str.contains(r"\[VICTIM\]").all()
    assert intimate["relationship"].isin(["partner", "dating", "spouse"]).all()
    assert candidates.loc[candidates["track"] == "public", "relationship"].isna().all()


def test_asking_for_more_than_the_bank_holds_reports_the_shortfall(tmp_path):
    write_small_bank(tmp_path, per_cell=1)
    candidates, problems = generate.generate_candidates(GENERATORS, 2, tmp_path, cache=False, progress=False)
    cells = len(grid.condition_grid())
    assert len(candidates) == cells and candidates["candidate_id"].str.endswith("-01").all()
    assert len(problems) == cells  # slot 2 of each cell went to a generator of its own, which found nothing
    assert problems["candidate_ids"].map(lambda ids: ids == [ids[0]] and ids[0].endswith("-02")).all()
    assert problems["problem"].str.fullmatch(r"candidate\(s\) \S+-02 \(sim/\S+\): field skeletons: "
                                             r"List should have at least 1 item.*").all()
    assert generate.cells_without_candidates(candidates) == []
    _, problems = generate.generate_candidates(GENERATORS, 4, tmp_path, cache=False, progress=False)
    first_cell = problems[problems["cell_id"] == "financial_control/L1/matter_of_fact"]
    assert "asked for 2 skeletons, got 1" in set(first_cell["problem"])  # sim/GPT-5.4 held slots 1 and 4


def test_parse_errors_name_the_candidate_and_the_field():
    item = '{"setting": "a bakery", "skeleton": "[AGGRESSOR] took the tips from the jar."}'
    good = f'```json\n{{"skeletons": [{item}]}}\n```'
    assert generate.parse_skeletons(good, ["c-01"])[0].setting == "a bakery"
    missing = f'{{"skeletons": [{item}, {{"setting": "b"}}]}}'
    with pytest.raises(AnswerError, match=r"candidate c-02 \(gen\): field skeletons\.1\.skeleton: Field required"):
        generate.parse_skeletons(missing, ["c-01", "c-02"], "gen")
    with pytest.raises(AnswerError, match=r"candidate\(s\) c-01, c-02: no JSON object in the answer"):
        generate.parse_skeletons("Sure! Here are two scenarios.", ["c-01", "c-02"])
    bad_relationship = '{"skeletons": [{"skeleton": "[AGGRESSOR] took the tips from the jar.", "relationship": "x"}]}'
    with pytest.raises(AnswerError, match="candidate c-01: .*unknown relationship 'x'"):
        generate.parse_skeletons(bad_relationship, ["c-01"])


def test_an_unreadable_answer_is_asked_again_then_reported(fake_openai):
    spec = fake_openai.spec()
    request = llm.Request(spec, messages=[{"role": "user", "content": "write skeletons"}], tag={"role": "generator"})
    outcomes = generate.ask([request], lambda result, i: generate.parse_skeletons(result.text, ["x-L1-y-01"]),
                            reask=2, cache=False, progress=False)
    outcome = outcomes[0]
    assert outcome.value is None
    assert re.search(r"candidate\(s\) x-L1-y-01: no JSON object in the answer", outcome.reason)
    assert outcome.result.error is None and outcome.raw  # the last re-ask's (unreadable) answer is kept
    assert fake_openai.answered == 3  # the first answer and two re-asks, each stating the error

    fake_openai.reset()
    answers = iter(["not json", '{"skeletons": [{"skeleton": "[AGGRESSOR] took the tips from the jar."}]}'])
    fake_openai.responder = lambda body: {"content": next(answers)}
    outcome = generate.ask([request], lambda r, i: generate.parse_skeletons(r.text, ["c-01"]),
                           cache=False, progress=False)[0]
    assert outcome.reason is None and outcome.value is not None
    assert outcome.value[0].skeleton.startswith("[AGGRESSOR]") and fake_openai.answered == 2


def test_the_generator_prompt_quotes_the_rubric_of_the_cell_it_asks_for():
    requests = generate.build_requests(generate.plan(GENERATORS, n_per_cell=1))
    by_cell = {r.tag["cell_id"]: r.messages[0]["content"] for r in requests}
    prompt = by_cell["mild_violence/L3/matter_of_fact"]
    rubric = grid.SEVERITY_RUBRIC["mild_violence"]
    assert f"- L3 (this cell): {rubric['L3']}" in prompt
    assert f"- L1: {rubric['L1']}" in prompt and f"- L2: {rubric['L2']}" in prompt
    assert grid.SEVERITY_RUBRIC["financial_control"]["L3"] not in prompt
    this_cell = "- L1 (this cell): " + grid.SEVERITY_RUBRIC["public_dispute"]["L1"]
    assert this_cell in by_cell["public_dispute/L1/self_justifying"]
    assert "{{" not in prompt and "stranger, service_worker, official, group" in prompt


def test_metadata_in_a_generator_answer_is_read_into_its_vocabulary_or_left_out():
    def item(region: str, occupation: str, third_party: str) -> dict:
        return {"skeleton": "[AGGRESSOR] took the tips from the jar.", "setting_region": region,
                "partner_occupation": occupation, "affected_third_party": third_party}

    answer = json.dumps({"skeletons": [item("Japan", "registered nurse", "In-law"),
                                       item("Narnia", "wizard", "the whole village")]})
    known, unknown = generate.parse_skeletons(answer, ["c-01", "c-02"])
    assert (known.setting_region, known.partner_occupation, known.affected_third_party) == ("JP", "nurse", "in_law")
    assert (unknown.setting_region, unknown.partner_occupation, unknown.affected_third_party) == (None, None, None)


def test_the_simulated_generator_carries_the_bank_metadata(tmp_path):
    bank = write_small_bank(tmp_path).set_index("template_id")
    candidates, _ = generate.generate_candidates(GENERATORS, None, tmp_path, cache=False, progress=False)
    source = bank.loc[candidates["source_template_id"]]
    assert candidates["setting_region"].tolist() == source["setting_region"].tolist()
    assert candidates["affected_third_party"].tolist() == source["affected_third_party"].tolist()
    assert (candidates["partner_occupation"].fillna("-") == source["partner_occupation"].fillna("-").values).all()
