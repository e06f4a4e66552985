"""Expert screening (paper §3.2): a sheet for the experts, read back with every row checked, exclusions applied.

The sheet is a CSV (UTF-8 with BOM, so Excel opens it), one row per template: template_id, track,
dimension, severity, style, relationship, text, decision ("", keep or exclude), reason.
exclusions: template_id, cell_id, reason
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gama_utils.core.run_folders import atomic_write
from gama_utils.paths import resolve

SCREENING_COLUMNS = ("template_id", "track", "dimension", "severity", "style", "relationship", "text", "decision",
                     "reason")
DECISIONS = ("", "keep", "exclude")


class ScreeningError(ValueError):
    """A screening sheet names unknown templates or has an invalid row; the message names them."""


def export_screening_sheet(posts: pd.DataFrame, path: str | Path) -> Path:
    """Write the expert screening sheet (CSV, one row per template; fill decision = exclude and a reason).

    A sheet already at `path` that holds any decision or reason is left as it is, so a rerun never
    overwrites the experts' work.
    """
    path = resolve(path)
    if path.exists() and _filled(path):
        return path
    sheet = posts.sort_values("template_id").reindex(columns=SCREENING_COLUMNS)
    sheet["decision"], sheet["reason"] = "", ""
    return atomic_write(path, "\ufeff" + sheet.to_csv(index=False, lineterminator="\n"))


def _filled(path: Path) -> bool:
    try:
        sheet = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except (ValueError, UnicodeDecodeError):
        return True
    columns = [c for c in ("decision", "reason") if c in sheet.columns]
    return bool(sheet[columns].apply(lambda s: s.str.strip().ne("")).any().any()) if columns else True


def read_screening_sheet(path: str | Path) -> pd.DataFrame:
    """A filled-in screening sheet (CSV, as exported; Excel saves it as CSV) with every row checked."""
    path = resolve(path)
    if not path.exists():
        raise FileNotFoundError(f"screening sheet {path} does not exist")
    if path.suffix.lower() != ".csv":
        raise ScreeningError(f"screening sheet {path.name}: expected a .csv file (save the sheet as CSV UTF-8)")
    sheet = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    missing = [c for c in ("template_id", "decision") if c not in sheet.columns]
    if missing:
        raise ScreeningError(f"screening sheet {path.name}: missing column(s) {', '.join(missing)}")
    sheet = sheet.reindex(columns=[*sheet.columns, *(["reason"] if "reason" not in sheet.columns else [])]).fillna("")
    sheet["template_id"] = sheet["template_id"].str.strip()
    sheet["decision"] = sheet["decision"].str.strip().str.lower()
    sheet["reason"] = sheet["reason"].str.strip()
    problems = []
    for line, row in zip(range(2, len(sheet) + 2), sheet.itertuples(index=False)):
        if row.decision not in DECISIONS:
            problems.append(f"row {line} ({row.template_id}): field decision {row.decision!r} is not one of "
                            f"keep, exclude (or empty)")
        elif row.decision == "exclude" and not row.reason:
            problems.append(f"row {line} ({row.template_id}): field reason is empty; say why it is excluded")
    repeated = sorted(sheet.loc[sheet["template_id"].duplicated(), "template_id"].unique())
    if repeated:
        problems.append(f"template_id(s) listed more than once: {', '.join(repeated)}")
    if problems:
        raise ScreeningError(f"screening sheet {path.name}: " + "; ".join(problems))
    return sheet


def apply_screening(posts: pd.DataFrame, sheet: str | Path | pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Drop the templates the sheet excludes; returns (kept posts, exclusions with their reasons).

    sheet None applies no exclusion. Ids in the sheet that are not among `posts` are an error.
    """
    columns = ["template_id", "cell_id", "reason"]
    if sheet is None:
        return posts.reset_index(drop=True), pd.DataFrame(columns=columns)
    table = sheet if isinstance(sheet, pd.DataFrame) else read_screening_sheet(sheet)
    unknown = sorted(set(table["template_id"]) - set(posts["template_id"]))
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        raise ScreeningError(f"screening sheet names template_id(s) that are not among the compiled posts: {shown}")
    excluded = table[table["decision"] == "exclude"]
    reasons = dict(zip(excluded["template_id"], excluded["reason"]))
    exclusions = posts[posts["template_id"].isin(reasons)].sort_values("template_id")
    exclusions = exclusions.assign(reason=exclusions["template_id"].map(reasons))[columns].reset_index(drop=True)
    return posts[~posts["template_id"].isin(reasons)].reset_index(drop=True), exclusions
