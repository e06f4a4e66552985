"""The notebooks' `parameters` cells, generated from the schemas of gama_utils.runs.parameters.

A cell is plain assignments (papermill injects its values after it), one per schema field in the schema's
order, with the default as a Python literal and the field's type and description as the comment, in the
form papermill reads (`name = default  # type: int|None description`, shown by `papermill --help-notebook`).
After changing a schema, `python -m gama_utils.runs.parameter_cells write` rewrites the cells; `check` lists the
notebooks whose cell differs from its schema (a test runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from gama_utils.paths import NOTEBOOKS
from gama_utils.runs.parameters import SCHEMAS, schema

HEADER = ("# Parameters (papermill -p NAME VALUE, or a profile in configs/profiles/), generated from their schema in\n"
          "# gama_utils/runs/parameters.py, which also checks their types and ranges "
          "(python -m gama_utils.runs.parameter_cells).")
WIDTH = 120
ALIGN_UP_TO = 40  # comments line up after assignments up to this long; longer ones keep theirs two spaces on


def literal(value: Any) -> str:
    """A default as Python source: strings in double quotes, lists and dicts spelled out."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def type_name(annotation: Any) -> str:
    """A field's type in one word papermill's type comment can hold: int, str|None, list, str|dict|ModelSpec."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return type_name(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        args = typing.get_args(annotation)
        names = [type_name(a) for a in args if a is not type(None)] + (["None"] if type(None) in args else [])
        return "|".join(dict.fromkeys(names))
    if origin is Literal:
        return "|".join(dict.fromkeys(type(v).__name__ for v in typing.get_args(annotation)))
    if origin is not None:
        return getattr(origin, "__name__", str(origin))
    return getattr(annotation, "__name__", str(annotation).replace(" ", ""))


def cell_source(notebook: str) -> str:
    """The parameters cell of a notebook, from its schema."""
    fields = schema(notebook).model_fields
    assignments = {name: f"{name} = {literal(field.get_default(call_default_factory=True))}"
                   for name, field in fields.items()}
    column = max(len(text) for text in assignments.values() if len(text) <= ALIGN_UP_TO) + 2
    lines = HEADER.splitlines()
    for name, field in fields.items():
        start = f"{assignments[name]:<{column}}" if len(assignments[name]) < column else f"{assignments[name]}  "
        comment = f"type: {type_name(field.annotation)} {field.description or ''}".strip()
        wrapped = textwrap.wrap(comment, WIDTH - len(start) - 2) or [""]
        rest = textwrap.wrap(" ".join(wrapped[1:]), WIDTH - column - 2)
        lines.append(f"{start}# {wrapped[0]}".rstrip())
        lines.extend(f"{'':<{column}}# {more}" for more in rest)
    return "\n".join(lines)


def _parameters_cell(notebook: dict, path: Path) -> dict:
    cells = [c for c in notebook["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"{path}: {len(cells)} cells tagged 'parameters'; expected exactly one")
    return cells[0]


def _text(cell: dict) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def stale_cells(folder: Path = NOTEBOOKS) -> list[str]:
    """The notebooks whose parameters cell differs from the one their schema generates."""
    stale = []
    for name in SCHEMAS:
        path = folder / f"{name}.ipynb"
        cell = _parameters_cell(json.loads(path.read_text(encoding="utf-8")), path)
        if _text(cell) != cell_source(name):
            stale.append(name)
    return stale


def write_cells(folder: Path = NOTEBOOKS) -> list[Path]:
    """Rewrite every notebook's parameters cell from its schema; returns the notebooks changed."""
    changed = []
    for name in SCHEMAS:
        path = folder / f"{name}.ipynb"
        notebook = json.loads(path.read_text(encoding="utf-8"))
        cell = _parameters_cell(notebook, path)
        source = cell_source(name)
        if _text(cell) != source:
            cell["source"] = source if isinstance(cell["source"], str) else source.splitlines(keepends=True)
            path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    """`write` regenerates the cells; `check` exits 1 when one differs from its schema."""
    parser = argparse.ArgumentParser(prog="python -m gama_utils.runs.parameter_cells")
    parser.add_argument("command", choices=["write", "check"])
    args = parser.parse_args(argv)
    if args.command == "write":
        for path in write_cells():
            print(f"rewrote {path}")
        return 0
    stale = stale_cells()
    for name in stale:
        print(f"{name}: parameters cell differs from gama_utils.runs.parameters "
              "(run: python -m gama_utils.runs.parameter_cells write)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
