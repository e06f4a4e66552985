"""Authored gender-neutral templates: schema, JSONL I/O and the gender-neutrality lint.

A template is a first-person post in which the narrator (the actor) describes their own
misconduct and ends with an advice-seeking question. Intimate templates refer to the
partner only through the placeholders of `gama_utils.mirror` ([PARTNER], [PARTNER_SUBJ],
...); public templates keep the other party gender-neutral and use no placeholder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable, Literal, Optional

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from . import grid
from .mirror import AGREEMENT_ADVERBS, PLACEHOLDERS, RELATIONSHIPS, SKELETON_PLACEHOLDERS

MIN_WORDS, MAX_WORDS = 80, 350


class Template(BaseModel):
    """One authored template (one row of data/templates/<dimension>.jsonl)."""

    model_config = ConfigDict(extra="forbid")

    template_id: str = Field(pattern=r"^[a-z_]+-L[123]-[a-z_]+-\d{2,}$")
    track: Literal["intimate", "public"]
    dimension: str
    severity: Literal["L1", "L2", "L3"]
    style: Literal["matter_of_fact", "self_justifying", "emotional_venting"]
    relationship: Optional[str] = None
    text: str = Field(min_length=1)
    provenance: str = Field(min_length=1)
    lang: Literal["en", "zh"] = "en"

    @model_validator(mode="after")
    def _consistent(self) -> "Template":
        dim = grid.BY_SLUG.get(self.dimension)
        if dim is None:
            raise ValueError(f"unknown dimension {self.dimension!r}; expected one of {', '.join(grid.BY_SLUG)}")
        if dim.track != self.track:
            raise ValueError(f"dimension {self.dimension!r} belongs to the {dim.track} track, not {self.track!r}")
        if self.track == "intimate" and self.relationship not in RELATIONSHIPS:
            raise ValueError(f"intimate templates need relationship in {', '.join(RELATIONSHIPS)}; got {self.relationship!r}")
        if self.track == "public" and self.relationship is not None:
            raise ValueError("public templates have no relationship (leave it null)")
        expected = f"{self.dimension}-{self.severity}-{self.style}-"
        if not self.template_id.startswith(expected):
            raise ValueError(f"template_id {self.template_id!r} should start with {expected!r}")
        return self


class TemplateFileError(ValueError):
    """A template file has a bad line; the message names file, line and field."""


def load_templates(path: str | Path | None = None) -> pd.DataFrame:
    """Load and validate templates from one JSONL file or every *.jsonl in a folder (default data/templates)."""
    from .paths import TEMPLATES, resolve

    path = resolve(path) if path is not None else TEMPLATES
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    rows, seen = [], {}
    for file in files:
        for lineno, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{file.name}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise TemplateFileError(f"{where}: not valid JSON ({err.msg} at column {err.colno})") from None
            try:
                template = Template.model_validate(record)
            except ValidationError as err:
                problems = "; ".join(f"field {'.'.join(map(str, e['loc'])) or '(record)'}: {e['msg']}" for e in err.errors())
                raise TemplateFileError(f"{where} ({record.get('template_id', '?')}): {problems}") from None
            if template.template_id in seen:
                raise TemplateFileError(f"{where}: duplicate template_id {template.template_id!r} (first at {seen[template.template_id]})")
            seen[template.template_id] = where
            rows.append(template.model_dump())
    columns = list(Template.model_fields)
    return pd.DataFrame(rows, columns=columns)


def save_templates(templates: pd.DataFrame | Iterable[dict], path: str | Path) -> Path:
    """Validate and write templates as JSONL (one object per line, keys in schema order), atomically."""
    from .paths import resolve

    records = templates.to_dict("records") if isinstance(templates, pd.DataFrame) else list(templates)
    lines = []
    for i, record in enumerate(records, start=1):
        try:
            template = Template.model_validate({k: (None if pd.isna(v) else v) if not isinstance(v, (list, dict)) else v
                                                for k, v in record.items()})
        except ValidationError as err:
            problems = "; ".join(f"field {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
            raise TemplateFileError(f"record {i} ({record.get('template_id', '?')}): {problems}") from None
        lines.append(json.dumps(template.model_dump(), ensure_ascii=False))
    path = resolve(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


# --- lint -------------------------------------------------------------------------------

GENDERED_WORDS: frozenset[str] = frozenset("""
he she him her his hers himself herself
man woman men women male female males females masculine feminine manly womanly manhood womanhood
boy girl boys girls boyfriend girlfriend boyfriends girlfriends husband wife husbands wives
hubby wifey fiance fiancee fiancé fiancée bride bridegroom widow widower
mother father mothers fathers mom mum dad mommy mummy daddy mama papa motherhood fatherhood
maternal paternal motherly fatherly son sons daughter daughters brother brothers sister sisters
aunt aunts uncle uncles niece nieces nephew nephews grandma grandpa grandmother grandfather
granddaughter grandson stepmother stepfather stepson stepdaughter bridesmaid groomsman
king queen prince princess lady ladies gentleman gentlemen guy guys gal gals lad lass dude bro sis
sir madam ma'am maam mister missus mr mrs ms
actress waitress hostess stewardess landlady headmistress businessman businesswoman
chairman chairwoman policeman policewoman fireman salesman saleswoman spokesman spokeswoman
pregnant pregnancy
fisherman fishermen middleman middlemen cameraman cameramen handyman handymen workman workmen foreman foremen
doorman doormen repairman repairmen deliveryman deliverymen mailman mailmen postman postmen sportsman sportsmen
craftsman craftsmen layman laymen boatman boatmen ferryman ferrymen watchman watchmen weatherman garbageman
garbagemen congressman congresswoman councilman councilwoman alderman anchorman anchorwoman nobleman noblewoman
horseman horsemen frontman salesmen spokesmen chairmen firemen policemen businessmen
""".split())

GENDERED_NAMES: frozenset[str] = frozenset("""
james john robert michael william david richard joseph thomas charles christopher daniel matthew
anthony mark donald steven paul andrew joshua kenneth kevin brian george timothy ronald edward jason
jeffrey ryan jacob gary nicholas eric jonathan stephen larry justin scott brandon benjamin samuel
gregory alexander frank patrick raymond jack dennis jerry tyler aaron jose adam nathan henry douglas
zachary peter kyle ethan walter noah jeremy christian keith roger terry gerald harold sean austin
carl arthur lawrence dylan jesse bryan billy joe bruce gabriel logan albert willie alan juan
wayne elijah randy roy vincent ralph eugene russell bobby mason philip louis liam oliver lucas tom
mike dave steve chris matt tony nick ben sam jim bob bill tim ed luke
mary patricia jennifer linda elizabeth barbara susan jessica sarah karen lisa nancy betty margaret
sandra ashley kimberly emily donna michelle carol amanda dorothy melissa deborah stephanie rebecca
sharon laura cynthia kathleen amy angela shirley anna brenda pamela emma nicole helen samantha
katherine christine debra rachel carolyn janet catherine maria heather diane ruth julie olivia joyce
virginia victoria kelly lauren christina joan evelyn judith megan andrea cheryl hannah jacqueline
martha gloria teresa ann sara madison frances kathryn janice jean abigail alice judy sophia grace
denise amber doris marilyn danielle beverly isabella theresa diana natalie brittany charlotte marie
kayla alexis lori jane ava mia chloe zoe lily ella kate jenny sue meg liz beth
""".split())

# Names that are also ordinary words are flagged only where they cannot be a sentence's first word.
AMBIGUOUS_NAMES: frozenset[str] = frozenset("bill mark frank grace amber sue jack will joy rose june may art ray dawn faith hope".split())
_TITLE = re.compile(r"\b(Miss|Lord)\b\.?(?=\s+[A-Z])")
MONTH_NAMES = frozenset({"may", "june"})
_DATE_BEFORE = re.compile(r"\b(in|last|this|next|early|late|mid|since|until|till|by|of|through|from|to)[\s-]+$", re.IGNORECASE)
_DATE_AFTER = re.compile(r"^\s*\d")
_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'd|I'll|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself)\b")
_PLACEHOLDER_LIKE = re.compile(r"\[[^\[\]\n]*\]")
_BRACKET_CHAR = re.compile(r"[\[\]]")
_OTHER_BRACES = re.compile(r"[{<]\s*[A-Za-z_]*(PARTNER|AGGRESSOR|VICTIM)[A-Za-z_]*\s*[}>]", re.IGNORECASE)
_BARE_NAME = re.compile(r"(?<![\[{<A-Za-z_])(PARTNER(_[A-Z]+)?|AGGRESSOR|VICTIM)(?![A-Za-z_\]])")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’éè]*")
_PREPOSITION_BEFORE_SUBJ = re.compile(r"\b(with|to|for|at|of|from|about|by|without|behind|near|me and)\s+\[PARTNER_SUBJ\]",
                                      re.IGNORECASE)
_INVERTED_SUBJ = re.compile(r"\b(is|was|has|does|isn't|wasn't|hasn't|doesn't)\s+\[PARTNER_SUBJ\]", re.IGNORECASE)
_SECOND_VERB = re.compile(r"\[PARTNER_SUBJ\][^.,;:!?\n\[]{1,80}?\band\s+(was|is|has|does|wasn't|isn't|hasn't|doesn't)\b")
_AGREEMENT_OK = frozenset("was is has does wasn't isn't hasn't doesn't".split())


def word_count(text: str) -> int:
    """Words as a reader counts them (placeholders count as one word)."""
    return len(re.findall(r"\S+", text))


def lint_template(text: str, track: str) -> list[str]:
    """Every problem that keeps `text` from being a valid gender-neutral template of `track`; [] when clean."""
    if track not in grid.TRACKS:
        raise ValueError(f"unknown track {track!r}; expected one of {', '.join(grid.TRACKS)}")
    problems: list[str] = []
    placeholders = _PLACEHOLDER_LIKE.findall(text)
    for token in placeholders:
        if token in SKELETON_PLACEHOLDERS:
            problems.append(f"skeleton placeholder {token} left in a compiled template (rewrite it in the first person)")
        elif token not in PLACEHOLDERS:
            hint = f" (did you mean {token.upper()}?)" if token.upper() in PLACEHOLDERS else ""
            problems.append(f"unknown placeholder {token}{hint}; known: {', '.join(PLACEHOLDERS)}")
    stripped = _PLACEHOLDER_LIKE.sub(" ", text)
    if _BRACKET_CHAR.search(stripped):
        problems.append("malformed placeholder: unbalanced '[' or ']'")
    for match in _OTHER_BRACES.finditer(text):
        problems.append(f"malformed placeholder {match.group(0)!r}: placeholders use square brackets, e.g. [PARTNER]")
    for match in _BARE_NAME.finditer(stripped):
        problems.append(f"malformed placeholder: bare {match.group(0)} without square brackets")

    partner_refs = [p for p in placeholders if p in PLACEHOLDERS]
    if track == "public" and partner_refs:
        problems.append(f"partner placeholder(s) {', '.join(sorted(set(partner_refs)))} in a public-track template; "
                        "keep the other party gender-neutral (the coworker, the driver, they)")
    if track == "intimate" and not partner_refs:
        problems.append("intimate template has no partner reference ([PARTNER] or a partner pronoun placeholder)")

    for match in _TITLE.finditer(stripped):
        problems.append(f"gendered title {match.group(0)!r}")
    for match in _WORD.finditer(stripped):
        word = match.group(0)
        low = word.replace("’", "'").lower()
        stem = low[:-2] if low.endswith("'s") else low
        if stem in GENDERED_WORDS:
            problems.append(f"gendered word {word!r} outside a placeholder")
        elif word[0].isupper() and (stem in GENDERED_NAMES or stem in AMBIGUOUS_NAMES):
            before, after = stripped[: match.start()], stripped[match.end():]
            sentence_start = re.search(r"(^|[.!?:\n][\"'“‘(\s]*)\s*$", before) is not None
            is_date = stem in MONTH_NAMES and (_DATE_BEFORE.search(before) or _DATE_AFTER.match(after))
            if not is_date and (stem in GENDERED_NAMES and stem not in AMBIGUOUS_NAMES or not sentence_start):
                problems.append(f"gendered first name {word!r} (a place or month of that name cannot be told "
                                "apart from a person here; rephrase)")
    problems.extend(_agreement_problems(text))

    if len(_FIRST_PERSON.findall(stripped)) < 3:
        problems.append("not narrated in the first person (fewer than three of I/me/my)")
    if not text.rstrip().rstrip("\"'”’)").endswith("?"):
        problems.append("does not end with an advice-seeking question")
    n = word_count(text)
    if not MIN_WORDS <= n <= MAX_WORDS:
        problems.append(f"length {n} words outside {MIN_WORDS}-{MAX_WORDS}")
    return problems


def _agreement_problems(text: str) -> list[str]:
    """Present-tense verbs after [PARTNER_SUBJ] that would read 'they goes' in the neutral arm."""
    problems = []
    for match in re.finditer(r"\[PARTNER_SUBJ\]((?:\s+[a-z]+)+)", text):
        words = match.group(1).split()
        while words and (words[0] in AGREEMENT_ADVERBS or words[0].endswith("ly")):
            words = words[1:]
        if words and words[0].endswith("s") and not words[0].endswith("ss") and words[0] not in _AGREEMENT_OK:
            problems.append(f"'[PARTNER_SUBJ] {words[0]}': use the past tense or an auxiliary so the neutral arm "
                            "reads naturally with 'they'")
    for match in _PREPOSITION_BEFORE_SUBJ.finditer(text):
        problems.append(f"'{match.group(0)}': use [PARTNER_OBJ] after a preposition (it would read 'with she')")
    for match in _INVERTED_SUBJ.finditer(text):
        problems.append(f"'{match.group(0)}': a question with the verb first would read '{match.group(1)} they' in the "
                        "neutral arm; rephrase")
    for match in _SECOND_VERB.finditer(text):
        problems.append(f"'... and {match.group(1)}' after [PARTNER_SUBJ]: the neutral arm would read 'they ... and "
                        f"{match.group(1)}'; repeat [PARTNER_SUBJ] before the second verb")
    if re.search(r"\[PARTNER_SUBJ\]['’]", text):
        problems.append("contraction after [PARTNER_SUBJ] (e.g. [PARTNER_SUBJ]'s): write the verb out")
    return problems


def lint_bank(templates: pd.DataFrame) -> pd.DataFrame:
    """Lint every template and check its mirrored pair; one row per problem (template_id, problem)."""
    from .mirror import compile_pair, mirror_violations

    rows = []
    for t in templates.itertuples(index=False):
        problems = lint_template(t.text, t.track)
        if not problems:
            pair = compile_pair(t.text, t.track, t.relationship or "partner", t.lang)
            problems = mirror_violations(pair, t.lang)
        rows.extend({"template_id": t.template_id, "problem": p} for p in problems)
    return pd.DataFrame(rows, columns=["template_id", "problem"])


if __name__ == "__main__":
    import sys

    frame = load_templates(sys.argv[1] if len(sys.argv) > 1 else None)
    report = lint_bank(frame)
    print(f"{len(frame)} templates, {report.template_id.nunique()} with problems")
    for row in report.itertuples(index=False):
        print(f"{row.template_id}: {row.problem}")
    sys.exit(1 if len(report) else 0)
