"""The second independent reader of the bank: a person's blind reading of each template, compared with the bank.

Two files per dimension in data/bank_reviews/second_reader/ (data/bank_reviews/README.md documents them):

- `<dimension>.csv` (READING_COLUMNS), one row per template, read from its id and text only: the region, the
  partner's occupation (intimate track), the narrator's, the affected third party (the vocabularies of
  `bank_metadata`; an occupation the table lacks is written `+job`), whether the text fits its dimension and
  severity (`fits`, `disputable: <slug>` for another dimension of its track, `disputable: severity`) and
  whether its closing asks for `advice` or a `verdict`.
- `<dimension>.verdicts.csv` (VERDICT_COLUMNS), one row per disagreement with the bank, whose verdict starts
  with one of VERDICT_PREFIXES.

A disagreement (`comparison`, `judged`): for a metadata field, the bank's recorded value ("" when missing)
differs from the reading (the partner's occupation on the intimate track only); for `dimension`, the reading
is `disputable`; for `closing`, it is `verdict`. A `changed` verdict says the bank took the reader's value,
so it is no disagreement any more; the bank as it was at the reading is the bank with those changes undone,
which is what the agreement and Cohen's kappa "at the reading" compare. `summary` counts everything the
datasheet states.

`python -m gama_utils.bench.second_reader check [--folder DIR] [--templates PATH]` prints the counts per field
and, as CSV rows of the verdicts file, every disagreement without a verdict and every verdict that is stale or
still disagrees; it exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from sklearn.metrics import cohen_kappa_score

from gama_utils.bench import bank_metadata
from gama_utils.core import grid

FOLDER = bank_metadata.REVIEWS / "second_reader"
METADATA_FIELDS = (*bank_metadata.SECOND_READING_FIELDS, "affected_third_party")
LABEL_FIELDS = ("dimension", "closing")
FIELDS = (*METADATA_FIELDS, *LABEL_FIELDS)
KAPPA_FIELDS = ("setting_region", "affected_third_party")
READING_COLUMNS = ("template_id", *METADATA_FIELDS, "dimension_fit", "closing", "note")
VERDICT_COLUMNS = ("template_id", "field", "recorded", "second_reader", "verdict")
FITS, DISPUTABLE, SEVERITY = "fits", "disputable: ", "severity"
ADVICE, VERDICT = "advice", "verdict"
KEPT, CHANGED, REWRITTEN, LABEL_KEPT = "recorded kept", "changed", "rewritten", "label kept"
VERDICT_PREFIXES = (KEPT, CHANGED, REWRITTEN, LABEL_KEPT)
PREFIXES_BY_FIELD = {**{f: (KEPT, CHANGED) for f in METADATA_FIELDS},
                     **{f: (REWRITTEN, LABEL_KEPT, KEPT) for f in LABEL_FIELDS}}
NEW_JOB = "+"
# judged statuses: a current disagreement kept, resolved by a rewrite, or without a verdict; a change the bank
# took; a `changed` row whose field still disagrees; a verdict that matches no disagreement of the reading
STATUSES = ("kept", "rewritten", "unreviewed", "changed", "still_disagrees", "stale")
JUDGED_COLUMNS = ("template_id", "field", "recorded", "second_reader", "verdict", "status")


class SecondReaderError(ValueError):
    """A second-reader file that does not follow its format (the message names file, line and field)."""


@dataclass(frozen=True)
class SecondReading:
    """The second reader's files: the reading and verdict rows of every dimension read, and which were not."""

    reading: pd.DataFrame
    verdicts: pd.DataFrame
    read: tuple[str, ...]
    unread: tuple[str, ...]


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """The (line, row) pairs of a CSV whose header must be exactly `columns`."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header) != columns:
            raise SecondReaderError(f"{path}, line 1: the header must be {', '.join(columns)} "
                                    f"(found {', '.join(header or []) or 'nothing'})")
        rows = []
        for values in reader:
            if not values or values == [""]:
                continue
            if len(values) != len(columns):
                raise SecondReaderError(f"{path}, line {reader.line_num}: {len(values)} values, expected "
                                        f"{len(columns)} ({', '.join(columns)})")
            rows.append((reader.line_num, dict(zip(columns, values))))
    return rows


def _table_occupation(job: str) -> str | None:
    """The occupations-table row whose name or a variant is `job` (any case), else None."""
    for row in bank_metadata.occupations().itertuples():
        if job.lower() in (row.occupation.lower(), *(v.lower() for v in row.variants)):
            return str(row.occupation)
    return None


def reading_value(field: str, value: str) -> str:
    """A reading's value as the bank would record it: a `+job` the table now has becomes its occupation."""
    if field in ("partner_occupation", "narrator_occupation") and value.startswith(NEW_JOB):
        return _table_occupation(value[1:]) or value
    return value


def _occupation_problem(value: str, new_job_allowed: bool) -> str | None:
    if value == "" or value in set(bank_metadata.occupations()["occupation"]):
        return None
    if value.startswith(NEW_JOB) and new_job_allowed:
        job = value[1:]
        return None if job and job == job.strip().lower() else \
            f"{value!r}: a job the table lacks is written in lower case after '+', e.g. '+sommelier'"
    found = _table_occupation(value)
    if found is not None:
        return f"{value!r} is a variant of the table's occupation {found!r}: write {found!r}"
    return (f"{value!r} is not an occupation of data/lexicons/occupations.csv"
            + (" (write a job the table lacks as '+job')" if new_job_allowed else ""))


def _fit_problem(value: str, dimension: str) -> str | None:
    if value == FITS:
        return None
    others = [d.slug for d in grid.dimensions(grid.dimension(dimension).track) if d.slug != dimension]
    if value.startswith(DISPUTABLE) and value[len(DISPUTABLE):] in (SEVERITY, *others):
        return None
    return f"{value!r} is not {FITS!r}, '{DISPUTABLE}{SEVERITY}' nor '{DISPUTABLE}<slug>' of {', '.join(others)}"


def value_problem(field: str, value: str, dimension: str, *, reading: bool = True) -> str | None:
    """Why `value` is not a valid second-reader value of `field` for a template of `dimension`, or None.

    `reading`: a value of the reader (a `+job` allowed), else a recorded value of the bank.
    """
    intimate = grid.dimension(dimension).track == "intimate"
    if value == "" and not reading and field in METADATA_FIELDS:
        return None
    if field == "setting_region":
        try:
            bank_metadata.validate_region(value)
        except ValueError as err:
            return str(err)
        return None
    if field == "partner_occupation" and not intimate and value:
        return f"{value!r}: the partner's occupation is read on the intimate track only (leave it empty)"
    if field in ("partner_occupation", "narrator_occupation"):
        return _occupation_problem(value, reading)
    if field == "affected_third_party":
        return None if value in bank_metadata.THIRD_PARTIES else \
            f"{value!r} is not one of {', '.join(bank_metadata.THIRD_PARTIES)}"
    if field == "dimension_fit":
        return _fit_problem(value, dimension)
    if field == "closing":
        return None if value in (ADVICE, VERDICT) else f"{value!r} is neither {ADVICE!r} nor {VERDICT!r}"
    raise ValueError(f"unknown second-reader field {field!r}")


def _id_problem(template_id: str, dimension: str) -> str | None:
    return None if template_id.startswith(f"{dimension}-") else \
        f"{template_id!r} is not a template of {dimension} (ids start '{dimension}-')"


def read_reading(path: str | Path, dimension: str | None = None) -> pd.DataFrame:
    """One dimension's reading (`<dimension>.csv`), validated: READING_COLUMNS plus dimension and line."""
    path = Path(path)
    dimension = dimension or path.stem
    seen: dict[str, int] = {}
    rows = []
    for line, row in _rows(path, READING_COLUMNS):
        where = f"{path}, line {line} ({row['template_id'] or 'no template_id'})"
        problem = _id_problem(row["template_id"], dimension)
        if problem is None and row["template_id"] in seen:
            problem = f"{row['template_id']!r} read twice (first at line {seen[row['template_id']]})"
        if problem is not None:
            raise SecondReaderError(f"{where}, field template_id: {problem}")
        seen[row["template_id"]] = line
        for field in (*METADATA_FIELDS, "dimension_fit", "closing"):
            problem = value_problem(field, row[field], dimension)
            if problem is not None:
                raise SecondReaderError(f"{where}, field {field}: {problem}")
        rows.append({**row, "dimension": dimension, "line": line})
    return pd.DataFrame(rows, columns=[*READING_COLUMNS, "dimension", "line"])


def _verdict_value_problem(row: dict[str, str], dimension: str) -> tuple[str, str] | None:
    """(column, problem) for a verdict row's recorded or second_reader value that cannot be, else None."""
    field = row["field"]
    if field in METADATA_FIELDS:
        for column, reading in (("recorded", False), ("second_reader", True)):
            problem = value_problem(field, row[column], dimension, reading=reading)
            if problem is not None:
                return column, problem
        return None
    if field == "dimension":
        allowed = (dimension, *grid.SEVERITIES, SEVERITY)
        if row["recorded"] not in allowed:
            return "recorded", f"{row['recorded']!r} is not {', '.join(allowed)}"
        problem = _fit_problem(_fit(row["second_reader"]), dimension)
        if problem or _fit(row["second_reader"]) == FITS:
            return "second_reader", problem or f"{row['second_reader']!r}: a dimension row is a disputable reading"
        return None
    if (row["recorded"], row["second_reader"]) != (ADVICE, VERDICT):
        return "recorded", f"a closing row records {ADVICE!r} and reads {VERDICT!r}"
    return None


def _fit(value: str) -> str:
    """A dimension reading in the reading's form: 'emotional_blackmail' and 'disputable: emotional_blackmail' alike."""
    value = value.strip()
    return value if value == FITS or value.startswith(DISPUTABLE) else f"{DISPUTABLE}{value}"


def verdict_prefix(verdict: str) -> str | None:
    """The VERDICT_PREFIXES entry a verdict starts with (followed by ': ' and a reason), else None."""
    match = re.match(rf"({'|'.join(VERDICT_PREFIXES)}): \S", verdict)
    return match.group(1) if match else None


def read_verdicts(path: str | Path, dimension: str | None = None) -> pd.DataFrame:
    """One dimension's verdicts (`<dimension>.verdicts.csv`), validated: VERDICT_COLUMNS plus dimension and line."""
    path = Path(path)
    dimension = dimension or path.name.removesuffix(".verdicts.csv")
    seen: dict[tuple[str, str], int] = {}
    rows = []
    for line, row in _rows(path, VERDICT_COLUMNS):
        where = f"{path}, line {line} ({row['template_id'] or 'no template_id'})"
        problem = _id_problem(row["template_id"], dimension)
        if problem is not None:
            raise SecondReaderError(f"{where}, field template_id: {problem}")
        if row["field"] not in FIELDS:
            raise SecondReaderError(f"{where}, field field: {row['field']!r} is not one of {', '.join(FIELDS)}")
        if row["field"] == "partner_occupation" and grid.dimension(dimension).track != "intimate":
            raise SecondReaderError(f"{where}, field field: partner_occupation is read on the intimate track only")
        key = (row["template_id"], row["field"])
        if key in seen:
            raise SecondReaderError(f"{where}, field field: a second verdict on {row['field']} of this template "
                                    f"(first at line {seen[key]})")
        seen[key] = line
        bad = _verdict_value_problem(row, dimension)
        if bad is not None:
            raise SecondReaderError(f"{where}, field {bad[0]}: {bad[1]}")
        prefix = verdict_prefix(row["verdict"])
        allowed = PREFIXES_BY_FIELD[row["field"]]
        if prefix not in allowed:
            raise SecondReaderError(f"{where}, field verdict: {row['verdict']!r} must start with one of "
                                    + ", ".join(f"'{p}: <why>'" for p in allowed) + f" for a {row['field']} row")
        rows.append({**row, "dimension": dimension, "line": line})
    return pd.DataFrame(rows, columns=[*VERDICT_COLUMNS, "dimension", "line"])


def load(folder: str | Path | None = None) -> SecondReading:
    """The second reader's files of every dimension of the active grid (`folder`: default FOLDER).

    A dimension is read when its `<dimension>.csv` exists; its verdicts file may be missing (no verdicts yet);
    a verdicts file without a reading is an error.
    """
    folder = Path(folder) if folder is not None else FOLDER
    readings, verdicts, read, unread = [], [], [], []
    for d in grid.DIMENSIONS:
        reading_path, verdict_path = folder / f"{d.slug}.csv", folder / f"{d.slug}.verdicts.csv"
        if not reading_path.exists():
            if verdict_path.exists():
                raise SecondReaderError(f"{verdict_path}: verdicts without a reading ({reading_path.name} missing)")
            unread.append(d.slug)
            continue
        read.append(d.slug)
        readings.append(read_reading(reading_path, d.slug))
        if verdict_path.exists():
            verdicts.append(read_verdicts(verdict_path, d.slug))
    reading = pd.concat(readings, ignore_index=True) if readings else pd.DataFrame(
        columns=[*READING_COLUMNS, "dimension", "line"])
    verdict = pd.concat(verdicts, ignore_index=True) if verdicts else pd.DataFrame(
        columns=[*VERDICT_COLUMNS, "dimension", "line"])
    return SecondReading(reading, verdict, tuple(read), tuple(unread))


def _recorded(value: object) -> str:
    return value if isinstance(value, str) else ""


def comparison(templates: pd.DataFrame, reading: pd.DataFrame) -> pd.DataFrame:
    """The bank against the reading, one row per template read and field: template_id, dimension, field, recorded,
    second_reader (as read), agree.

    `templates` needs template_id, track, severity and the metadata fields; templates it lacks are not compared.
    For `dimension`, recorded is the dimension (the severity for `disputable: severity`) and they agree when the
    reading `fits`; for `closing`, recorded is `advice`.
    """
    columns = ["template_id", "track", "severity", *METADATA_FIELDS]
    bank = templates.reindex(columns=columns).merge(reading, on="template_id", suffixes=("", "_read"))
    rows = []
    for t in bank.to_dict("records"):
        for field in METADATA_FIELDS:
            if field == "partner_occupation" and t["track"] != "intimate":
                continue
            recorded, read = _recorded(t[field]), t[f"{field}_read"]
            rows.append({"template_id": t["template_id"], "dimension": t["dimension"], "field": field,
                         "recorded": recorded, "second_reader": read, "agree": recorded == reading_value(field, read)})
        fit = t["dimension_fit"]
        rows.append({"template_id": t["template_id"], "dimension": t["dimension"], "field": "dimension",
                     "recorded": t["severity"] if fit == DISPUTABLE + SEVERITY else t["dimension"],
                     "second_reader": fit, "agree": fit == FITS})
        rows.append({"template_id": t["template_id"], "dimension": t["dimension"], "field": "closing",
                     "recorded": ADVICE, "second_reader": t["closing"], "agree": t["closing"] == ADVICE})
    return pd.DataFrame(rows, columns=["template_id", "dimension", "field", "recorded", "second_reader", "agree"])


def disagreements(templates: pd.DataFrame, reading: pd.DataFrame) -> pd.DataFrame:
    """Where the bank and the reading differ now: template_id, field, recorded, second_reader."""
    compared = comparison(templates, reading)
    return compared.loc[~compared["agree"], ["template_id", "field", "recorded", "second_reader"]].reset_index(
        drop=True)


def _key(field: str, recorded: str, read: str) -> tuple[str, str]:
    """What a verdict row must share with a disagreement besides template and field: (recorded, reading) for a
    metadata field; the reading alone for a dimension or closing row (its recorded value is implied)."""
    return (recorded, read) if field in METADATA_FIELDS else ("", _fit(read) if field == "dimension" else read)


def judged(compared: pd.DataFrame, verdicts: pd.DataFrame) -> pd.DataFrame:
    """Every current disagreement with its verdict and every verdict row on a template compared, with a status
    (STATUSES): JUDGED_COLUMNS, sorted by template_id and field.

    A verdict matches a disagreement on template_id, field, recorded and second_reader (a dimension or closing
    row on template_id, field and reading). `changed` rows must not be disagreements any more (else "still
    disagrees") and must carry the reader's value (else "stale"); kept rows must match a current disagreement.
    """
    current = compared[~compared["agree"]]
    by_field = {(r.template_id, r.field): r for r in compared.itertuples()}
    open_ = {(r.template_id, r.field): r for r in current.itertuples()}
    rows, matched = [], set()
    for v in verdicts[verdicts["template_id"].isin(set(compared["template_id"]))].itertuples():
        where = (v.template_id, v.field)
        prefix = verdict_prefix(v.verdict)
        base = {"template_id": v.template_id, "field": v.field, "recorded": v.recorded,
                "second_reader": v.second_reader, "verdict": v.verdict}
        row = open_.get(where)
        same = row is not None and _key(v.field, v.recorded, v.second_reader) == _key(
            v.field, row.recorded, row.second_reader)
        if prefix == CHANGED:
            read = by_field.get(where)
            status = ("still_disagrees" if row is not None else
                      "changed" if read is not None and read.second_reader == v.second_reader else "stale")
        elif prefix == REWRITTEN:
            status = "rewritten" if same or (row is None and where in by_field) else "stale"
        else:
            status = "kept" if same else "stale"
        if row is not None and status != "stale":
            matched.add(where)
        rows.append({**base, "status": status})
    for r in current.itertuples():
        if (r.template_id, r.field) not in matched:
            rows.append({"template_id": r.template_id, "field": r.field, "recorded": r.recorded,
                         "second_reader": r.second_reader, "verdict": "", "status": "unreviewed"})
    frame = pd.DataFrame(rows, columns=list(JUDGED_COLUMNS))
    return frame.sort_values(["template_id", "field", "status"], kind="stable").reset_index(drop=True)


def kappa(first: list[str], second: list[str]) -> float | None:
    """Cohen's kappa of two readers' labels (sklearn), or None when it is undefined (both gave one label only)."""
    if not first or len(set(first) | set(second)) < 2:
        return None
    value = float(cohen_kappa_score(first, second))
    return None if math.isnan(value) else value


def summary(templates: pd.DataFrame, reader: SecondReading | None = None) -> dict:
    """The datasheet's numbers: per field, templates read, agreement at the reading (count, share, kappa for
    KAPPA_FIELDS), disagreements at the reading (now + changed), kept, changed or rewritten, unreviewed, and the
    verdicts that are stale or still disagree; the dimensions read and not read."""
    reader = reader if reader is not None else load()
    compared = comparison(templates, reader.reading)
    verdicts = judged(compared, reader.verdicts)
    rows = []
    for field in FIELDS:
        mine, status = compared[compared["field"] == field], verdicts.loc[verdicts["field"] == field, "status"]
        counts = {s: int((status == s).sum()) for s in STATUSES}
        at_reading = int((~mine["agree"]).sum()) + counts["changed"]
        undone = verdicts[(verdicts["field"] == field) & (verdicts["status"] == "changed")]
        was = dict(zip(undone["template_id"], undone["recorded"]))
        then = [was.get(t, r) for t, r in zip(mine["template_id"], mine["recorded"])]
        read = [reading_value(field, v) for v in mine["second_reader"]]
        k = kappa(then, read) if field in KAPPA_FIELDS else None
        n = len(mine)
        rewritten_unmatched = 0 if field in METADATA_FIELDS else int(
            ((verdicts["field"] == field) & (verdicts["status"] == "rewritten")
             & ~verdicts["template_id"].isin(mine.loc[~mine["agree"], "template_id"])).sum())
        at_reading += rewritten_unmatched
        rows.append({"field": field, "read": n, "agree_at_reading": n - at_reading,
                     "agreement_at_reading": round((n - at_reading) / n, 3) if n else None,
                     "kappa": None if k is None else round(k, 3), "disagreements_at_reading": at_reading,
                     "disagreements_now": int((~mine["agree"]).sum()), **counts})
    dimensions = templates.reindex(columns=["template_id", "dimension"])
    missed = dimensions[dimensions["dimension"].isin(reader.read)
                        & ~dimensions["template_id"].isin(reader.reading["template_id"])]
    return {"read": list(reader.read), "unread": list(reader.unread),
            "templates_read": int(compared["template_id"].nunique()), "templates_not_read": len(missed),
            "fields": rows}


def main(argv: list[str] | None = None) -> int:
    """The command line: `check [--folder DIR] [--templates PATH]`."""
    from gama_utils.bench.templates import load_templates

    parser = argparse.ArgumentParser(prog="python -m gama_utils.bench.second_reader")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("check", help="compare the second reader's files with the bank")
    run.add_argument("--folder", help=f"the second reader's files (default {FOLDER})")
    run.add_argument("--templates", help="a .jsonl file or folder (default data/templates)")
    args = parser.parse_args(argv)
    bank = load_templates(args.templates)
    reader = load(args.folder)
    counted = summary(bank, reader)
    print(f"read: {', '.join(counted['read']) or 'none'}; not read: {', '.join(counted['unread']) or 'none'}; "
          f"{counted['templates_read']} templates read, {counted['templates_not_read']} of the dimensions read not")
    print(pd.DataFrame(counted["fields"]).to_string(index=False))
    found = judged(comparison(bank, reader.reading), reader.verdicts)
    open_ = found[found["status"].isin(["unreviewed", "still_disagrees", "stale"])]
    if len(open_):
        print(f"\n{len(open_)} rows to settle (status, then the verdicts file's columns):")
        writer = csv.writer(sys.stdout)
        writer.writerows(open_[["status", *VERDICT_COLUMNS]].itertuples(index=False))
    return 1 if len(open_) else 0


if __name__ == "__main__":
    raise SystemExit(main())
