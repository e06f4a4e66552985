"""Authored gender-neutral templates: schema, JSONL I/O (the lint lives in `gama_utils.bench.lint`).

A template is a first-person post in which the narrator (the actor) describes their own
misconduct and ends with an advice-seeking question. Intimate templates refer to the
partner only through the placeholders of `gama_utils.bench.mirror` ([PARTNER], [PARTNER_SUBJ],
...); public templates keep the other party gender-neutral and use no placeholder.
Metadata for stratified analysis (setting_region, partner_occupation, narrator_occupation,
affected_third_party) is optional in the schema (the bank records setting_region and
affected_third_party for every template, and an occupation wherever the text names the partner's or
the narrator's job); `gama_utils.bench.bank_metadata` defines the vocabularies, and 03 carries them into the pairs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gama_utils.bench import bank_metadata
from gama_utils.bench.lint import MAX_WORDS, MIN_WORDS, lint_bank, lint_template, word_count
from gama_utils.bench.mirror import RELATIONSHIPS
from gama_utils.core import grid

__all__ = [
    "BANK_VERSION",
    "DERIVED_COLUMNS",
    "MAX_WORDS",
    "METADATA_FIELDS",
    "MIN_WORDS",
    "Template",
    "TemplateFileError",
    "lint_bank",
    "lint_template",
    "load_templates",
    "save_templates",
    "word_count",
]

# The bank's version: 2 gave the neutral arm its grammar and every post an advice question; 3 the style
# bounds by voice, premises read by a second method, the narrator's occupation and metadata read twice.
BANK_VERSION = 3
METADATA_FIELDS = ("setting_region", "partner_occupation", "narrator_occupation", "affected_third_party")
DERIVED_COLUMNS = ("occupation_stereotype", "narrator_occupation_stereotype")


class Template(BaseModel):
    """One authored template (one row of data/templates/<dimension>.jsonl)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    template_id: str = Field(pattern=r"^[a-z_]+-L[123]-[a-z_]+-\d{2,}$")
    track: Literal["intimate", "public"]
    dimension: str
    severity: Literal["L1", "L2", "L3"]
    style: Literal["matter_of_fact", "self_justifying", "emotional_venting"]
    relationship: str | None = None
    text: str = Field(min_length=1)
    provenance: str = Field(min_length=1)
    lang: Literal["en", "zh"] = "en"
    setting_region: str | None = None
    partner_occupation: str | None = None
    narrator_occupation: str | None = None
    affected_third_party: str | None = None

    _region = field_validator("setting_region")(lambda v: v if v is None else bank_metadata.validate_region(v))
    _occupation = field_validator("partner_occupation", "narrator_occupation")(
        lambda v, info: v if v is None else bank_metadata.validate_occupation(v, info.field_name))
    _third_party = field_validator("affected_third_party")(
        lambda v: v if v is None else bank_metadata.validate_third_party(v))

    @model_validator(mode="after")
    def _consistent(self) -> Template:
        dim = grid.BY_SLUG.get(self.dimension)
        if dim is None:
            raise ValueError(f"unknown dimension {self.dimension!r}; expected one of {', '.join(grid.BY_SLUG)}")
        if dim.track != self.track:
            raise ValueError(f"dimension {self.dimension!r} belongs to the {dim.track} track, not {self.track!r}")
        if self.track == "intimate" and self.relationship not in RELATIONSHIPS:
            raise ValueError(f"intimate templates need relationship in {', '.join(RELATIONSHIPS)}; "
                             f"got {self.relationship!r}")
        if self.track == "public" and self.relationship is not None:
            raise ValueError("public templates have no relationship (leave it null)")
        if self.track == "public" and self.partner_occupation is not None:
            raise ValueError("public templates have no partner_occupation (leave it null)")
        expected = f"{self.dimension}-{self.severity}-{self.style}-"
        if not self.template_id.startswith(expected):
            raise ValueError(f"template_id {self.template_id!r} should start with {expected!r}")
        return self


class TemplateFileError(ValueError):
    """A template file has a bad line; the message names file, line and field."""


def _no_duplicate_keys(where: str):
    def hook(pairs: list[tuple[str, object]]) -> dict:
        keys = [k for k, _ in pairs]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise TemplateFileError(f"{where}: field(s) {', '.join(map(repr, repeated))} given twice in one record")
        return dict(pairs)
    return hook


def _problems(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        field = ".".join(map(str, e["loc"])) or "(record)"
        got = f" (got {type(e['input']).__name__} {e['input']!r:.40})" if e["type"].endswith("_type") else ""
        parts.append(f"field {field}: {e['msg']}{got}")
    return "; ".join(parts)


def _records(file: Path) -> Iterable[tuple[str, dict]]:
    """(file:line, record) for every non-blank line; bad bytes, bad JSON and non-objects are named."""
    data = file.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    count = 0
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        where = f"{file.name}:{lineno}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise TemplateFileError(f"{where}: not UTF-8 (byte 0x{raw[err.start]:02x} at column {err.start + 1}); "
                                    "save the file as UTF-8") from None
        if not line.strip():
            continue
        try:
            record = json.loads(line, object_pairs_hook=_no_duplicate_keys(where))
        except json.JSONDecodeError as err:
            raise TemplateFileError(f"{where}: not valid JSON ({err.msg} at column {err.colno})") from None
        if not isinstance(record, dict):
            raise TemplateFileError(f"{where}: a record must be a JSON object, got {type(record).__name__}")
        count += 1
        yield where, record
    if count == 0:
        raise TemplateFileError(f"{file.name}: empty file (no templates); delete it or add templates")


def load_templates(path: str | Path | None = None) -> pd.DataFrame:
    """Load and validate templates from one JSONL file or every *.jsonl in a folder (default data/templates).

    The frame has the schema's columns plus the derived `occupation_stereotype` (the partner's) and
    `narrator_occupation_stereotype`.
    """
    from gama_utils.paths import TEMPLATES, resolve

    path = resolve(path) if path is not None else TEMPLATES
    if not path.exists():
        raise TemplateFileError(f"{path}: no such file or folder")
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files:
        raise TemplateFileError(f"{path}: no *.jsonl template files")
    rows: list[dict] = []
    seen_ids: dict[str, str] = {}
    problems: list[str] = []
    for file in files:
        try:
            for where, record in _records(file):
                try:
                    template = Template.model_validate(record)
                except ValidationError as err:
                    problems.append(f"{where} ({record.get('template_id', '?')}): {_problems(err)}")
                    continue
                if template.template_id in seen_ids:
                    problems.append(f"{where}: field template_id: duplicate template_id {template.template_id!r} "
                                    f"(first at {seen_ids[template.template_id]})")
                    continue
                seen_ids[template.template_id] = where
                rows.append(template.model_dump())
        except TemplateFileError as err:  # the file itself (encoding, a broken line): its later lines are not read
            problems.append(str(err))
    if len(problems) == 1:
        raise TemplateFileError(problems[0])
    if problems:
        raise TemplateFileError(f"{len(problems)} problems in the template files:\n- " + "\n- ".join(problems))
    frame = pd.DataFrame(rows, columns=list(Template.model_fields))
    return frame.assign(occupation_stereotype=frame["partner_occupation"].map(bank_metadata.occupation_stereotype),
                        narrator_occupation_stereotype=frame["narrator_occupation"].map(
                            bank_metadata.occupation_stereotype))


def save_templates(templates: pd.DataFrame | Iterable[dict], path: str | Path) -> Path:
    """Validate and write templates as JSONL (one object per line, keys in schema order), atomically.

    Metadata fields are written only when set, so a bank without metadata keeps its bytes.
    """
    from gama_utils.paths import resolve

    records = templates.to_dict("records") if isinstance(templates, pd.DataFrame) else list(templates)
    lines = []
    for i, record in enumerate(records, start=1):
        clean = {k: (None if not isinstance(v, (list, dict)) and pd.isna(v) else v)
                 for k, v in record.items() if k not in DERIVED_COLUMNS}
        try:
            template = Template.model_validate(clean)
        except ValidationError as err:
            raise TemplateFileError(f"record {i} ({record.get('template_id', '?')}): {_problems(err)}") from None
        dumped = template.model_dump()
        for field in METADATA_FIELDS:
            if dumped[field] is None:
                del dumped[field]
        lines.append(json.dumps(dumped, ensure_ascii=False))
    path = resolve(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def add_lint_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of the template lint (shared by `gama lint` and `python -m gama_utils.bench.templates`)."""
    parser.add_argument("path", nargs="?", help="a .jsonl file or a folder (default data/templates)")
    parser.add_argument("--v2", action="store_true", help="also apply the bank v2 wording rules")


def run_lint(args: argparse.Namespace) -> tuple[int, str, str]:
    """Lint from parsed arguments: (exit code, report, error); 0 clean, 1 problems, 2 a file that cannot be read."""
    try:
        frame = load_templates(args.path)
    except TemplateFileError as err:
        return 2, "", f"error: {err}"
    report = lint_bank(frame, v2_rules=True if args.v2 else None)
    lines = [f"{len(frame)} templates, {report.template_id.nunique()} with problems",
             *(f"{row.template_id}: {row.problem}" for row in report.itertuples(index=False))]
    return (1 if len(report) else 0), "\n".join(lines), ""


def main(argv: list[str] | None = None) -> int:
    """`python -m gama_utils.bench.templates [PATH] [--v2]`."""
    parser = argparse.ArgumentParser(prog="python -m gama_utils.bench.templates", description="Lint template files.")
    add_lint_arguments(parser)
    code, out, err = run_lint(parser.parse_args(argv))
    if out:
        print(out)
    if err:
        print(err, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
