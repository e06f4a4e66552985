"""The measured limits of judges whose agreement with hand scores is stored, for reports and notebooks.

Today that is the lexicon judge: data/lexicons/agreement.json (`gama_utils.lexicon_agreement`)
holds its agreement with the held-out hand-scored answers, and the "Measured limits" paragraph
of data/lexicons/README.md says what the figures mean. Every report of a run that used the
lexicon as a judge, and notebooks 05/08 when they score with it, state both.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

from gama_utils import judges, lexicon_agreement
from gama_utils.escaping import markdown_cell
from gama_utils.paths import LEXICONS, ROOT

log = logging.getLogger(__name__)
LEXICON_README = LEXICONS / "README.md"
LIMITS_HEADING = "## Measured limits"
# Judge class → (stored agreement, the document whose LIMITS_HEADING paragraph explains it).
MEASURED: dict[type[judges.Judge], tuple[Path, Path]] = {
    judges.LexiconJudge: (lexicon_agreement.AGREEMENT_FILE, LEXICON_README),
}


def _measured(judge: object) -> tuple[Path, Path] | None:
    if isinstance(judge, str) and judge in judges.registered_judges():
        judge = judges.resolve_judge(judge)
    return next((files for kind, files in MEASURED.items() if isinstance(judge, kind)), None)


def measured_judges(names: Iterable[object]) -> list[str]:
    """The judges among `names` (judge names or Judge objects) whose agreement with hand scores is stored."""
    found = []
    for name in names:
        if _measured(name) is not None:
            found.append(name.name if isinstance(name, judges.Judge) else str(name))
    return list(dict.fromkeys(found))


def judges_in_manifest(manifest: dict) -> list[str]:
    """Measured judges that any stage of a run's manifest names (05's evaluator, 08's evaluators, ...)."""
    names: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            names.append(value)

    walk(manifest.get("stages") or {})
    return measured_judges(names)


def limits_paragraph(document: Path = LEXICON_README) -> str:
    """The first paragraph under the document's "## Measured limits" heading, as one line of Markdown."""
    lines = document.read_text(encoding="utf-8").splitlines()
    if LIMITS_HEADING not in lines:
        raise ValueError(f"{document} has no {LIMITS_HEADING!r} section")
    paragraph: list[str] = []
    for line in lines[lines.index(LIMITS_HEADING) + 1:]:
        if line.strip():
            paragraph.append(line.strip())
        elif paragraph:
            break
    return " ".join(paragraph)


def statements(judge_list: Iterable[object]) -> list[str]:
    """`statement` of every judge in the list that has one (each statement once)."""
    found: list[str] = []
    for judge in judge_list:
        text = statement(judge)
        if text and text not in found:
            found.append(text)
    return found


def statement(judge: object) -> str | None:
    """Markdown stating a judge's measured agreement with hand scores and its limits; None when none is stored."""
    files = _measured(judge)
    if files is None:
        return None
    stored, document = files
    result = json.loads(stored.read_text(encoding="utf-8"))
    name = judge.name if isinstance(judge, judges.Judge) else str(judge)
    parts = [f"**Judge {markdown_cell(name)}: measured agreement with hand scores** "
             f"(`{stored.relative_to(ROOT).as_posix()}`; explained in `{document.relative_to(ROOT).as_posix()}`).",
             limits_paragraph(document), lexicon_agreement.summary(result)]
    version = lexicon_agreement.lexicon_version()
    if result["lexicon"]["version"] != version:
        log.warning("the lexicon changed since %s was measured", stored)
        parts.append(f"**The lexicon changed since these figures were measured** (measured on version "
                     f"{result['lexicon']['version'][:12]}, the code now has {version[:12]}): re-measure with "
                     "`python -m gama_utils.lexicon_agreement --write`.")
    return "\n\n".join(parts)
