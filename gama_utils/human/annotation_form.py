"""The annotation form: one annotator's sheet as a self-contained HTML page, rendered from Jinja2 templates.

The markup, CSS and JavaScript live in gama_utils/human/jinja/human_form.{html.j2,css,js}; the page works
offline from file:// and saves the labels as a CSV the completed-sheet reader accepts.
"""

from __future__ import annotations

from functools import lru_cache

import jinja2
import pandas as pd

from gama_utils.core.schema import require
from gama_utils.human.csv_cells import FORMULA_STARTS, TEXT_PREFIX
from gama_utils.human.scale import LABELS, framing_keys, framings, sheet_columns

TEMPLATE = "human_form.html.j2"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The form's Jinja2 environment: templates from gama_utils/jinja, every substitution HTML-escaped."""
    return jinja2.Environment(loader=jinja2.PackageLoader("gama_utils.human", "jinja"), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True)


def form_context(sheet: pd.DataFrame, name: str, note: str | None = None) -> dict[str, object]:
    """What the template shows: the annotator, the note, the framings' questions and the sheet's items."""
    require(sheet, sheet_columns(), f"sheet {name}")
    items = [{"item_id": str(row["item_id"]), "answer_a": str(row["answer_a"]), "answer_b": str(row["answer_b"]),
              "chosen": {k: str(row[k]).strip() for k in framing_keys()}}
             for row in sheet.to_dict("records")]
    return {"name": name, "note": note, "labels": LABELS, "fields": list(framing_keys()), "items": items,
            "formula_starts": list(FORMULA_STARTS), "text_prefix": TEXT_PREFIX,
            "framings": [{"key": f.key, "name": f.name, "criterion": f.criterion,
                          "choices": list(zip(LABELS, f.options))} for f in framings()]}


def sheet_html(sheet: pd.DataFrame, name: str, note: str | None = None) -> str:
    """A self-contained HTML form for one annotator's sheet (inline CSS/JS, no external resources)."""
    return environment().get_template(TEMPLATE).render(form_context(sheet, name, note))
