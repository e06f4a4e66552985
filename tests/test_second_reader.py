"""The second independent reader: a hand-made bank, reading and verdicts counted by hand, the files' errors, and
the shipped bank's verdicts (skipped for the dimensions whose files have not arrived)."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from gama_utils.bench import datasheet, second_reader, wording
from gama_utils.bench.second_reader import READING_COLUMNS, VERDICT_COLUMNS, SecondReaderError
from gama_utils.bench.templates import load_templates
from gama_utils.core import grid
from gama_utils.paths import BENCHMARK

FC, PD = "financial_control", "public_dispute"
T1, T2, T3, T4 = (f"{FC}-L1-matter_of_fact-01", f"{FC}-L2-self_justifying-01", f"{FC}-L3-emotional_venting-01",
                  f"{FC}-L1-matter_of_fact-02")
P1, P2 = f"{PD}-L1-matter_of_fact-01", f"{PD}-L2-matter_of_fact-01"


def _bank() -> pd.DataFrame:
    """The bank now: t2's third party was changed from 'child' to the reader's 'none' after the reading."""
    rows = [(T1, "intimate", "L1", "GB", "nurse", None, "none"), (T2, "intimate", "L2", "JP", None, "cashier", "none"),
            (T3, "intimate", "L3", "FR", "pilot", None, "parent"), (T4, "intimate", "L1", "GB", None, None, "none"),
            (P1, "public", "L1", "US", None, None, "stranger"), (P2, "public", "L2", "unspecified", None, None,
                                                                  "neighbour")]
    return pd.DataFrame(rows, columns=["template_id", "track", "severity", "setting_region", "partner_occupation",
                                       "narrator_occupation", "affected_third_party"]).assign(
        dimension=lambda f: f["template_id"].str.split("-").str[0])


READING = {
    FC: [(T1, "GB", "nurse", "", "none", "fits", "advice", ""),
         (T2, "JP", "", "cashier", "none", "disputable: emotional_blackmail", "verdict", "guilt as the means"),
         (T3, "DE", "+sommelier", "", "parent", "disputable: severity", "advice", "")],
    PD: [(P1, "unspecified", "", "", "stranger", "fits", "advice", "Springfield: several countries"),
         (P2, "unspecified", "", "", "stranger", "fits", "advice", "")],
}
VERDICTS = {
    FC: [(T2, "affected_third_party", "child", "none", "changed: the child is present, not harmed"),
         (T2, "dimension", FC, "disputable: emotional_blackmail", "label kept: the money is the means"),
         (T2, "closing", "advice", "verdict", "rewritten: now asks what to do"),
         (T3, "setting_region", "FR", "DE", "recorded kept: Lyon is named twice"),
         (T3, "dimension", "L3", "disputable: severity", "rewritten: the debt now runs for months"),
         (T1, "narrator_occupation", "", "nurse", "recorded kept: a verdict on nothing")],
    PD: [(P1, "setting_region", "US", "unspecified", "recorded kept: the text names Ohio"),
         (P2, "affected_third_party", "neighbour", "stranger", "changed: a stranger, not a neighbour")],
}


def _write(path: Path, header: tuple[str, ...], rows: list[tuple]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _folder(tmp_path: Path, reading=READING, verdicts=VERDICTS) -> Path:
    for dimension, rows in reading.items():
        _write(tmp_path / f"{dimension}.csv", READING_COLUMNS, rows)
    for dimension, rows in verdicts.items():
        _write(tmp_path / f"{dimension}.verdicts.csv", VERDICT_COLUMNS, rows)
    return tmp_path


def _hand_kappa(first: list[str], second: list[str]) -> float:
    n = len(first)
    observed = sum(a == b for a, b in zip(first, second)) / n
    chance = sum(first.count(label) * second.count(label) for label in set(first) | set(second)) / n ** 2
    return (observed - chance) / (1 - chance)


def test_the_disagreements_and_their_verdicts_match_a_hand_count(tmp_path):
    reader = second_reader.load(_folder(tmp_path))
    assert reader.read == (FC, PD) and len(reader.unread) == len(grid.DIMENSIONS) - 2
    found = second_reader.disagreements(_bank(), reader.reading)
    # now: t2 dimension and closing, t3 region, partner (pilot vs +sommelier) and severity, p1 region, p2 third party
    assert sorted(map(tuple, found[["template_id", "field"]].values)) == sorted([
        (T2, "dimension"), (T2, "closing"), (T3, "setting_region"), (T3, "partner_occupation"), (T3, "dimension"),
        (P1, "setting_region"), (P2, "affected_third_party")])
    judged = second_reader.judged(second_reader.comparison(_bank(), reader.reading), reader.verdicts)
    status = {(r.template_id, r.field): r.status for r in judged.itertuples()}
    assert status == {(T2, "affected_third_party"): "changed", (T2, "dimension"): "kept",
                      (T2, "closing"): "rewritten", (T3, "setting_region"): "kept",
                      (T3, "partner_occupation"): "unreviewed", (T3, "dimension"): "rewritten",
                      (T1, "narrator_occupation"): "stale", (P1, "setting_region"): "kept",
                      (P2, "affected_third_party"): "still_disagrees"}


def test_the_summary_counts_agreement_and_kappa_at_the_reading(tmp_path):
    s = second_reader.summary(_bank(), second_reader.load(_folder(tmp_path)))
    assert (s["read"], s["templates_read"], s["templates_not_read"]) == ([FC, PD], 5, 1)  # t4 was not read
    rows = {r["field"]: r for r in s["fields"]}

    def counts(field):
        r = rows[field]
        return (r["read"], r["agree_at_reading"], r["agreement_at_reading"], r["disagreements_at_reading"],
                r["kept"], r["changed"], r["rewritten"], r["unreviewed"], r["still_disagrees"], r["stale"])

    # regions: t3 and p1 disagree, both kept: 3 of 5
    assert counts("setting_region") == (5, 3, 0.6, 2, 2, 0, 0, 0, 0, 0)
    # partner (intimate only, t1-t3): t3 without a verdict
    assert counts("partner_occupation") == (3, 2, 0.667, 1, 0, 0, 0, 1, 0, 0)
    # narrator: all five agree; the verdict on t1 matches nothing
    assert counts("narrator_occupation") == (5, 5, 1.0, 0, 0, 0, 0, 0, 0, 1)
    # third party: t2 was changed (child -> none, a disagreement at the reading), p2 'changed' but still differs
    assert counts("affected_third_party") == (5, 3, 0.6, 2, 0, 1, 0, 0, 1, 0)
    assert counts("dimension") == (5, 3, 0.6, 2, 1, 0, 1, 0, 0, 0)
    assert counts("closing") == (5, 4, 0.8, 1, 0, 0, 1, 0, 0, 0)
    # kappa at the reading, against the bank as it was (t2 'child'): p_o = 3/5; regions p_e = (1+1+2)/25 = 0.16,
    # kappa = 0.44 / 0.84; third parties p_e = (2+1+2)/25 = 0.2, kappa = 0.4 / 0.8
    bank_regions, read_regions = ["GB", "JP", "FR", "US", "unspecified"], ["GB", "JP", "DE", "unspecified",
                                                                         "unspecified"]
    bank_third, read_third = ["none", "child", "parent", "stranger", "neighbour"], ["none", "none", "parent",
                                                                                   "stranger", "stranger"]
    assert rows["setting_region"]["kappa"] == round(0.44 / 0.84, 3)
    assert _hand_kappa(bank_regions, read_regions) == pytest.approx(0.44 / 0.84)
    assert rows["affected_third_party"]["kappa"] == 0.5
    assert _hand_kappa(bank_third, read_third) == pytest.approx(0.5)
    assert second_reader.kappa(bank_third, read_third) == pytest.approx(cohen_kappa_score(bank_third, read_third))
    assert rows["narrator_occupation"]["kappa"] is None
    assert second_reader.kappa(["a", "a"], ["a", "a"]) is None


def test_a_new_job_the_table_gained_reads_as_its_occupation(tmp_path):
    assert second_reader.reading_value("partner_occupation", "+registered nurse") == "nurse"
    assert second_reader.reading_value("partner_occupation", "+sommelier") == "+sommelier"
    assert second_reader.reading_value("setting_region", "GB") == "GB"
    # t1 records 'nurse' now: the reader's '+registered nurse' was added to the table and the bank changed from ''
    reading = {FC: [(T1, "GB", "+registered nurse", "", "none", "fits", "advice", "")]}
    verdicts = {FC: [(T1, "partner_occupation", "", "+registered nurse", "changed: the job was added and recorded")]}
    reader = second_reader.load(_folder(tmp_path, reading, verdicts))
    judged = second_reader.judged(second_reader.comparison(_bank(), reader.reading), reader.verdicts)
    assert judged[["field", "status"]].values.tolist() == [["partner_occupation", "changed"]]
    partner = {r["field"]: r for r in second_reader.summary(_bank(), reader)["fields"]}["partner_occupation"]
    assert (partner["read"], partner["agree_at_reading"], partner["disagreements_now"], partner["changed"]) == (
        1, 0, 0, 1)


def test_no_files_read_no_dimension(tmp_path):
    s = second_reader.summary(_bank(), second_reader.load(tmp_path))
    assert s["read"] == [] and s["unread"] == [d.slug for d in grid.DIMENSIONS] and s["templates_read"] == 0
    assert all(r["read"] == 0 and r["agreement_at_reading"] is None for r in s["fields"])


def test_the_datasheet_states_the_counted_numbers_and_the_dimensions_not_read(tmp_path):
    section = datasheet._environment().get_template("second_reader.md.j2")
    counted = second_reader.summary(_bank(), second_reader.load(_folder(tmp_path)))
    text = section.render(m={"second_reader": counted})
    assert "5 templates of 2 dimensions (`financial_control`, `public_dispute`), read blind" in text
    assert "1 templates of these dimensions have no row in the reading." in text
    assert "Not read by a second reader: `privacy_violation`, `emotional_blackmail`," in text
    assert "| `setting_region` | 5 | 3 | 0.6 | 0.524 | 2 | 0 | 2 | 0 |" in text
    assert "| `partner_occupation` | 3 | 2 | 0.667 | – | 1 | 0 | 0 | 1 |" in text
    assert "| `affected_third_party` | 5 | 3 | 0.6 | 0.5 | 2 | 1 | 0 | 0 |" in text
    assert "| `closing` | 5 | 4 | 0.8 | – | 1 | 1 | 0 | 0 |" in text
    assert "1 verdict rows match no disagreement of the reading, and 1 `changed` rows" in text
    nothing = section.render(m={"second_reader": second_reader.summary(_bank(), second_reader.load(tmp_path / "no"))})
    assert nothing.startswith("- No dimension has been read by a second, independent reader yet")
    unread = f"`{'`, `'.join(grid.BY_SLUG)}`), so no agreement"  # every dimension of the grid, a recipe's too
    assert "| field |" not in nothing and unread in nothing


def _bad_reading(field: str, value: str, dimension: str = FC) -> dict:
    row = dict(zip(READING_COLUMNS, READING[dimension][0]))
    row[field] = value
    return {dimension: [tuple(row.values())]}


@pytest.mark.parametrize("reading, message", [
    (_bad_reading("setting_region", "XX"), "field setting_region: setting_region 'XX' is not an ISO"),
    (_bad_reading("setting_region", ""), "field setting_region"),
    (_bad_reading("partner_occupation", "preschool teacher"),
     "field partner_occupation: 'preschool teacher' is a variant of the table's occupation 'kindergarten teacher'"),
    (_bad_reading("partner_occupation", "+Sommelier"), "field partner_occupation: '+Sommelier': a job the table"),
    (_bad_reading("narrator_occupation", "astronaut"), "field narrator_occupation: 'astronaut' is not an occupation"),
    (_bad_reading("partner_occupation", "nurse", PD), "field partner_occupation: 'nurse': the partner's occupation is "
                                                      "read on the intimate track only"),
    (_bad_reading("affected_third_party", "cousin"), "field affected_third_party: 'cousin' is not one of none"),
    (_bad_reading("dimension_fit", "disputable: public_dispute"), "field dimension_fit: 'disputable: public_dispute'"),
    (_bad_reading("dimension_fit", "unsure"), "field dimension_fit"),
    (_bad_reading("closing", "judgement"), "field closing: 'judgement' is neither 'advice' nor 'verdict'"),
    (_bad_reading("template_id", T1, PD), "field template_id: 'financial_control-L1-matter_of_fact-01' is not a "
                                          "template of public_dispute"),
    ({FC: [READING[FC][0], READING[FC][0]]}, "line 3 (financial_control-L1-matter_of_fact-01), field template_id: "
                                             "'financial_control-L1-matter_of_fact-01' read twice (first at line 2)"),
])
def test_a_bad_reading_names_file_line_and_field(tmp_path, reading, message):
    folder = _folder(tmp_path, reading, {})
    with pytest.raises(SecondReaderError) as err:
        second_reader.load(folder)
    name = next(iter(reading))
    assert f"{folder / name}.csv, line " in str(err.value) and message in str(err.value)


def _bad_verdict(column: str, value: str, base: int = 0) -> dict:
    row = dict(zip(VERDICT_COLUMNS, VERDICTS[FC][base]))
    row[column] = value
    return {FC: [tuple(row.values())]}


@pytest.mark.parametrize("verdicts, message", [
    (_bad_verdict("verdict", "kept: it was right"),
     "line 2 (financial_control-L2-self_justifying-01), field verdict: 'kept: it was right' must start with one of "
     "'recorded kept: <why>'"),
    (_bad_verdict("verdict", "label kept: fine"),
     "field verdict: 'label kept: fine' must start with one of 'recorded kept: <why>', 'changed: <why>' for a "
     "affected_third_party"),
    (_bad_verdict("verdict", "changed:"), "field verdict"),
    (_bad_verdict("field", "third_party"), "field field: 'third_party' is not one of setting_region"),
    (_bad_verdict("second_reader", "cousin"), "field second_reader: 'cousin' is not one of none"),
    (_bad_verdict("second_reader", "fits", 1), "field second_reader"),
    (_bad_verdict("recorded", "verdict", 2), "field recorded: a closing row records 'advice' and reads 'verdict'"),
    ({FC: [VERDICTS[FC][0], VERDICTS[FC][0]]}, "line 3 (financial_control-L2-self_justifying-01), field field: a "
                                               "second verdict on affected_third_party of this template"),
])
def test_a_bad_verdict_names_file_line_and_field(tmp_path, verdicts, message):
    folder = _folder(tmp_path, READING, verdicts)
    with pytest.raises(SecondReaderError) as err:
        second_reader.load(folder)
    assert f"{folder / FC}.verdicts.csv, line " in str(err.value) and message in str(err.value)


def test_a_partner_verdict_on_the_public_track_is_named(tmp_path):
    folder = _folder(tmp_path, READING, {PD: [(P1, "partner_occupation", "", "", "changed: none")]})
    with pytest.raises(SecondReaderError, match=r"public_dispute\.verdicts\.csv, line 2 \(public_dispute-L1-matter_of_"
                                                r"fact-01\), field field: partner_occupation is read on the intimate"):
        second_reader.load(folder)


def test_a_bad_header_and_verdicts_without_a_reading_are_named(tmp_path):
    _write(tmp_path / f"{FC}.csv", READING_COLUMNS[:-1], [READING[FC][0][:-1]])
    with pytest.raises(SecondReaderError, match=r"financial_control\.csv, line 1: the header must be template_id, "):
        second_reader.load(tmp_path)
    (tmp_path / f"{FC}.csv").unlink()
    _write(tmp_path / f"{FC}.verdicts.csv", VERDICT_COLUMNS, VERDICTS[FC])
    with pytest.raises(SecondReaderError, match=r"verdicts without a reading \(financial_control\.csv missing\)"):
        second_reader.load(tmp_path)


# --- the shipped bank: the readers' files arrive at merge, one pair per dimension ---------------------------------

@pytest.fixture(scope="module")
def bank():
    return load_templates()


def test_every_second_reader_file_names_a_dimension():
    if not second_reader.FOLDER.exists():
        pytest.skip(f"{second_reader.FOLDER} not there yet: the second reader's files arrive at merge")
    slugs = {d.slug for d in grid.DIMENSIONS}
    names = sorted(p.name for p in second_reader.FOLDER.iterdir())
    assert all(n.removesuffix(".verdicts.csv").removesuffix(".csv") in slugs for n in names), names


@pytest.mark.parametrize("dimension", [d.slug for d in grid.DIMENSIONS])
def test_every_disagreement_of_the_shipped_bank_with_the_second_reader_has_a_verdict(bank, dimension):
    if not (second_reader.FOLDER / f"{dimension}.csv").exists():
        pytest.skip(f"no second reading of {dimension} ({second_reader.FOLDER}/{dimension}.csv) yet")
    reading = second_reader.read_reading(second_reader.FOLDER / f"{dimension}.csv")
    path = second_reader.FOLDER / f"{dimension}.verdicts.csv"
    verdicts = second_reader.read_verdicts(path) if path.exists() else pd.DataFrame(columns=VERDICT_COLUMNS)
    mine = bank[bank["dimension"] == dimension]
    assert list(reading["template_id"]) == list(mine["template_id"]), "one row per template, in the bank's order"
    assert set(verdicts["template_id"]) <= set(reading["template_id"]), "verdicts on templates not read"
    judged = second_reader.judged(second_reader.comparison(mine, reading), verdicts)
    for status in ("unreviewed", "still_disagrees", "stale"):
        assert judged[judged["status"] == status].empty, judged[judged["status"] == status].to_string()
    texts = mine.set_index("template_id")["text"]
    rewritten = judged[(judged["field"] == "closing") & (judged["status"] == "rewritten")]
    assert all(wording.advice_question_problem(texts[t]) is None for t in rewritten["template_id"])


def _copy_of_the_bank(bank: pd.DataFrame) -> list[tuple]:
    return [(t.template_id, t.setting_region, *(v if isinstance(v, str) else "" for v in (
        t.partner_occupation, t.narrator_occupation)), t.affected_third_party, "fits", "advice", "")
        for t in bank[bank["dimension"] == FC].itertuples()]


def test_a_reading_that_copies_the_shipped_bank_agrees_on_every_field(bank, tmp_path):
    mine, rows = bank[bank["dimension"] == FC], _copy_of_the_bank(bank)
    s = second_reader.summary(bank, second_reader.load(_folder(tmp_path, {FC: rows}, {})))
    assert s["templates_read"] == len(mine) and s["templates_not_read"] == 0
    assert all(r["agreement_at_reading"] == 1.0 and r["disagreements_now"] == 0 for r in s["fields"])
    assert {r["field"]: r["kappa"] for r in s["fields"] if r["kappa"] is not None} == {
        "setting_region": 1.0, "affected_third_party": 1.0}


def test_the_shipped_datasheet_states_the_second_readers_numbers():
    readme = (BENCHMARK / "README.md").read_text(encoding="utf-8")
    if "read by a second, independent reader" not in readme:
        pytest.skip("data/gama_bench/README.md was built before the second reader's section; the merge rebuilds it")
    pairs = pd.read_json(BENCHMARK / "pairs.jsonl", lines=True, dtype=False)
    section = datasheet._environment().get_template("second_reader.md.j2")
    assert section.render(m={"second_reader": second_reader.summary(pairs)}) in readme


def test_the_command_line_lists_what_needs_a_verdict_and_fails(bank, tmp_path, capsys):
    rows = _copy_of_the_bank(bank)
    rows[0] = (*rows[0][:6], "verdict", "")
    folder = _folder(tmp_path, {FC: rows}, {})
    assert second_reader.main(["check", "--folder", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"unreviewed,{rows[0][0]},closing,advice,verdict," in out and "1 rows to settle" in out
    _write(folder / f"{FC}.verdicts.csv", VERDICT_COLUMNS, [(rows[0][0], "closing", "advice", "verdict",
                                                             "label kept: it asks what to do too")])
    assert second_reader.main(["check", "--folder", str(folder)]) == 0
    assert "rows to settle" not in capsys.readouterr().out
