"""Publication of the benchmark: its files and manifest, the accounting of dropped templates, publish, rebuild.

The benchmark folder holds exactly BENCHMARK_FILES: pairs.jsonl / pairs.csv (compilation.PAIR_COLUMNS),
intimate.jsonl / public.jsonl (the same rows, one file per track, for the dataset card's configs), the
datasheet README.md (gama_utils.bench.datasheet) opening with the Hugging Face dataset card's YAML front
matter (gama_utils.bench.dataset_card), the figures (PNG, PDF) and MANIFEST.sha256 (sha256sum format) over
the data files and the datasheet; the figures are illustrations redrawn from pairs.jsonl and are not part of it.

Every template the bank promises becomes a pair or is listed in `dropped_templates` with why
(generation, gender cue, lint problem, review, near-duplicate, screening). `publish` refuses a
benchmark with an empty grid cell, and one with any dropped template unless allow_drops.

Rebuilding data/gama_bench from the bank (01 → 03 executed, then `publish`) is orchestration:
`python -m gama_utils.runs.rebuild` (gama_utils.runs.rebuild).
"""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path

import pandas as pd

from gama_utils.bench import benchmark_figures, dataset_card, datasheet
from gama_utils.bench.compilation import PAIR_COLUMNS
from gama_utils.bench.composition import cells_missing
from gama_utils.bench.review import is_gender_problem
from gama_utils.core.run_folders import atomic_write, check_path, file_sha256
from gama_utils.core.schema import require
from gama_utils.paths import BENCHMARK, resolve

log = logging.getLogger(__name__)

DATA_FILES = ("pairs.jsonl", "pairs.csv", *dataset_card.TRACK_FILES.values(), "README.md")
FIGURE_FILES = ("composition.png", "composition.pdf", "wordcloud.png", "wordcloud.pdf")
MANIFEST = "MANIFEST.sha256"
BENCHMARK_FILES = (*DATA_FILES, MANIFEST, *FIGURE_FILES)
DROP_COLUMNS = ("template_id", "cell_id", "kind", "reason")
DROP_KINDS = ("generation", "gender cue", "lint problem", "review", "near-duplicate", "screening")
STAGES = ("01_generate", "02_review", "03_compile")


class IncompleteBenchmarkError(ValueError):
    """A benchmark with empty grid cells, or fewer pairs than its templates promise; the message lists them."""


# --- the files ------------------------------------------------------------------------------------

def _pair_records(pairs: pd.DataFrame) -> list[dict]:
    require(pairs, PAIR_COLUMNS, "pairs")
    records = pairs.sort_values("template_id", kind="stable")[list(PAIR_COLUMNS)].to_dict("records")
    for record in records:
        for column in ("relationship", "setting_region", "partner_occupation", "occupation_stereotype",
                       "narrator_occupation", "narrator_occupation_stereotype",
                       "affected_third_party"):
            if not isinstance(record[column], str):
                record[column] = None
    return records


def pairs_jsonl(pairs: pd.DataFrame) -> str:
    """pairs.jsonl: one object per pair, keys in PAIR_COLUMNS order, UTF-8 kept."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _pair_records(pairs))


def pairs_csv(pairs: pd.DataFrame) -> str:
    """pairs.csv: the same columns, RFC 4180 quoting, '\\n' line ends, empty cells for missing values."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(PAIR_COLUMNS)
    for record in _pair_records(pairs):
        writer.writerow(["" if record[c] is None else record[c] for c in PAIR_COLUMNS])
    return buffer.getvalue()


def write_manifest(folder: Path) -> Path:
    """MANIFEST.sha256 over the data files, in sha256sum's format."""
    text = "".join(f"{file_sha256(folder / name)}  {name}\n" for name in sorted(DATA_FILES))
    return atomic_write(folder / MANIFEST, text)


def manifest_problems(folder: str | Path) -> list[str]:
    """Files whose SHA-256 differs from MANIFEST.sha256 ([] when the benchmark is intact)."""
    folder = resolve(folder)
    problems = []
    for line in (folder / MANIFEST).read_text(encoding="utf-8").splitlines():
        digest, name = line.split(maxsplit=1)
        if not (folder / name).exists():
            problems.append(f"{name}: missing")
        elif file_sha256(folder / name) != digest:
            problems.append(f"{name}: SHA-256 differs from {MANIFEST}")
    return problems


def write_benchmark(pairs: pd.DataFrame, folder: str | Path, summary: dict, measured: dict) -> dict[str, Path]:
    """Write the benchmark folder: pairs.jsonl/.csv, one JSONL per track, the dataset card and datasheet, the two
    figures (PNG, PDF), the manifest."""
    folder = resolve(folder)
    card = dataset_card.front_matter(pairs) + datasheet.render(pairs, summary, measured, MANIFEST)
    written = {"pairs.jsonl": atomic_write(folder / "pairs.jsonl", pairs_jsonl(pairs)),
               "pairs.csv": atomic_write(folder / "pairs.csv", pairs_csv(pairs)),
               **{name: atomic_write(folder / name, pairs_jsonl(pairs[pairs["track"] == track]))
                  for track, name in dataset_card.TRACK_FILES.items()},
               "README.md": atomic_write(folder / "README.md", card)}
    note = benchmark_figures.construction_note(summary)
    for stem, figure in (("composition", benchmark_figures.composition_figure(pairs, note)),
                         ("wordcloud", benchmark_figures.wordcloud_figure(pairs, note))):
        written.update({p.name: p for p in benchmark_figures.save(figure, folder, stem)})
    written[MANIFEST] = write_manifest(folder)
    return {name: written[name] for name in BENCHMARK_FILES}


# --- what was dropped, and the refusal to publish -------------------------------------------------

def dropped_templates(candidates: pd.DataFrame, generation_problems: pd.DataFrame, reviews: pd.DataFrame,
                      posts: pd.DataFrame, removals: pd.DataFrame, cross_bank_removals: pd.DataFrame,
                      exclusions: pd.DataFrame) -> pd.DataFrame:
    """Every promised template that did not become a pair, and why: template_id, cell_id, kind, reason.

    kind is one of DROP_KINDS. A candidate is named by the bank template it replays when there is
    one, else by its candidate_id (so is a slot the generator never filled).
    """
    names = dict(zip(candidates["candidate_id"], candidates["source_template_id"].fillna(candidates["candidate_id"])))
    rows = []
    for problem in generation_problems.to_dict("records"):
        for candidate_id in problem["candidate_ids"]:
            if candidate_id not in names:
                reason = f"{problem['generator']}: {problem['problem']}"
                rows.append((candidate_id, problem["cell_id"], "generation", reason))
    for review in reviews[reviews["verdict"] != "keep"].to_dict("records"):
        gender = review["gender_neutral"] in (False,) or any(map(is_gender_problem, review["lint_problems"]))
        kind = ("review" if isinstance(review["error"], str) else "gender cue" if gender else
                "lint problem" if len(review["lint_problems"]) else "review")
        rows.append((names[review["candidate_id"]], review["cell_id"], kind, review["reasons"]))
    for post in posts[~posts["usable"].astype(bool)].to_dict("records"):
        problems = list(post["lint_problems"])
        kind = "gender cue" if any(map(is_gender_problem, problems)) else "lint problem"
        rows.append((post["template_id"], post["cell_id"], kind if problems else "review",
                     "; ".join(problems) or f"no post: {post['error']}"))
    for frame, where in ((removals, "within its cell"), (cross_bank_removals, "premise, across the bank")):
        for r in frame.to_dict("records"):
            rows.append((r["removed_id"], r["cell_id"], "near-duplicate",
                         f"cosine {r['similarity']:.2f} to {r['duplicate_of']} ({where})"))
    for e in exclusions.to_dict("records"):
        rows.append((e["template_id"], e["cell_id"], "screening", e["reason"]))
    drops = pd.DataFrame(rows, columns=list(DROP_COLUMNS))
    return drops.sort_values(["template_id", "kind"], kind="stable").reset_index(drop=True)


def completeness_problems(pairs: pd.DataFrame, drops: pd.DataFrame, *, allow_drops: bool = False) -> list[str]:
    """Why a benchmark may not be published: empty grid cells (always), dropped templates (unless allowed)."""
    problems = []
    empty = cells_missing(pairs)
    if empty:
        problems.append(f"{len(empty)} empty grid cell(s) with no pair: {', '.join(empty)}")
    if len(drops) and not allow_drops:
        listed = "; ".join(f"{d.template_id} [{d.kind}] {d.reason}" for d in drops.itertuples(index=False))
        problems.append(f"{len(pairs)} pairs where the templates promise {len(pairs) + len(drops)}: "
                        f"{len(drops)} template(s) dropped: {listed} (pass allow_drops / --allow-drops to publish "
                        "without them)")
    return problems


def publish(folder: str | Path, target: str | Path = BENCHMARK, *, drops: pd.DataFrame,
            allow_drops: bool = False) -> list[Path]:
    """Copy a written benchmark folder to data/gama_bench (or `target`), file by file, atomically.

    Refuses (IncompleteBenchmarkError, nothing copied) a benchmark with an empty grid cell, or with
    dropped templates unless allow_drops; `drops` is the frame of `dropped_templates`; and (RunFolderError, naming
    the link) a file of the folder that is a symbolic link to somewhere outside it.
    """
    folder, target = resolve(folder), resolve(target)
    sources = [check_path(folder / name, folder) for name in BENCHMARK_FILES]    # no link feeds the release
    problems = manifest_problems(folder)
    if problems:
        raise ValueError(f"benchmark folder {folder} is inconsistent: {'; '.join(problems)}")
    pairs = pd.read_json(folder / "pairs.jsonl", lines=True, dtype=False)
    refused = completeness_problems(pairs, drops, allow_drops=allow_drops)
    if refused:
        raise IncompleteBenchmarkError(f"refusing to publish {folder} to {target}: " + " | ".join(refused))
    written = [atomic_write(target / source.name, source.read_bytes()) for source in sources]
    for path in written:
        path.chmod(0o644)
    return written
