"""Audit of the template bank against the v2 checks: what each template needs from the authors.

`python -m gama_utils.bench.bank_audit audit [--json FILE] [--templates PATH]` prints a per-dimension
summary and writes, per template id, every problem found: singular-they agreement errors, a
closing question without advice, membership of a cross-bank near-duplicate group (with the other
ids), the setting-region guess (places named, English-speaking or not), third-party wording,
"!" count by style, the rhetorical devices of its style beyond their bounds (wording.STYLE_BOUNDS),
partner occupations named (with their stereotype direction), and the full lint with the v2 rules.
It also reads the bank with a second near-duplicate method that sees paraphrase
(embeddings "paraphrase": character n-grams and LSA) and lists each method's closest pairs.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import pandas as pd

from gama_utils.bench import bank_metadata, embeddings, wording
from gama_utils.bench.lint import lint_template
from gama_utils.bench.mirror import compile_pair

log = logging.getLogger(__name__)


def audit_template(t: dict, groups: dict[str, dict], review: dict[str, list[str]]) -> dict:
    """Every finding of the v2 checks for one template (a row of load_templates as a dict)."""
    relationship = t.get("relationship") or "partner"
    neutral = compile_pair(t["text"], t["track"], relationship, t.get("lang") or "en")["neutral"]
    agreement = wording.agreement_errors(neutral)
    advice = wording.advice_question_problem(t["text"])
    places = bank_metadata.place_mentions(t["text"])
    region = bank_metadata.region_guess(t["text"])
    occupations = bank_metadata.occupation_mentions(t["text"])
    partner_jobs = [o for o in occupations if o["partner"]] if t["track"] == "intimate" else []
    flagged = wording.flagged_third_party_wording(t["text"])
    group = groups.get(t["template_id"])
    problems = [f"singular-they agreement: {e}" for e in agreement]
    if advice:
        problems.append(advice)
    if group:
        problems.append(f"cross-bank near-duplicate (group {group['group']}, premise cosine "
                        f"{group['max_similarity']:.2f}) of {group['near_ids'].replace(';', ', ')}")
    problems += [f"third-party wording {w!r}: rewrite naturally (my family, my in-laws, my cousin, a friend)"
                 for w in flagged]
    problems += [f"style: {p}" for p in wording.style_problems(t["text"], t["style"])]
    if t["track"] == "intimate" and bank_metadata.english_speaking(region):
        problems.append(f"set in an English-speaking country (guess {region} from "
                        f"{', '.join(sorted({n for n, c in places if c == region}))})")
    return {
        "template_id": t["template_id"], "track": t["track"], "dimension": t["dimension"],
        "severity": t["severity"], "style": t["style"],
        "agreement_errors": agreement,
        "advice_question": advice is None, "closing_questions": wording.closing_questions(t["text"]),
        "near_duplicate_group": group["group"] if group else None,
        "near_duplicate_ids": group["near_ids"].split(";") if group else [],
        "similar_for_review": review.get(t["template_id"], []),
        "places": [f"{n} ({c})" for n, c in places], "region_guess": region,
        "english_speaking_guess": bank_metadata.english_speaking(region),
        "flagged_third_party_wording": flagged,
        "they_count": wording.singular_they_count(t["text"]),
        "exclamations": wording.exclamation_count(t["text"]),
        "style_devices": wording.style_devices(t["text"]),
        "echo_fragments": wording.echo_fragments(t["text"]),
        "emphatic_capitals": wording.emphatic_capitals(t["text"]),
        "rhetorical_questions": wording.rhetorical_questions(t["text"]),
        "repeated_role_noun": wording.repeated_role_noun(t["text"])[0],
        "occupations_named": [f"{o['surface']} → {o['occupation']} ({o['stereotype']})" for o in occupations],
        "narrator_occupation_guess": bank_metadata.narrator_occupation_guess(t["text"]),
        "partner_occupation_guess": partner_jobs[0]["occupation"] if partner_jobs else None,
        "partner_occupation_stereotype_guess": partner_jobs[0]["stereotype"] if partner_jobs else None,
        "lint_v2": lint_template(t["text"], t["track"], t.get("lang") or "en", v2_rules=True),
        "problems": problems,
    }


def audit_bank(bank: pd.DataFrame, threshold: float = embeddings.CROSS_BANK_THRESHOLD) -> tuple[pd.DataFrame, dict]:
    """One audit row per template, and the cross-bank similarity summary (distribution, top pairs)."""
    ids, texts = bank["template_id"].tolist(), bank["text"].tolist()
    grouped = embeddings.near_duplicate_groups(ids, texts, threshold, "premise")
    groups = {row["template_id"]: row for row in grouped.to_dict("records")}
    low, high = embeddings.REVIEW_BAND
    band = embeddings.similar_pairs(ids, texts, low, "premise")
    band = band[band["similarity"] < high]
    review: dict[str, list[str]] = {}
    for a, b, s in band.itertuples(index=False):
        review.setdefault(a, []).append(f"{b} ({s:.2f})")
        review.setdefault(b, []).append(f"{a} ({s:.2f})")
    rows = [audit_template(t, groups, review) for t in bank.to_dict("records")]
    summary = embeddings.similarity_summary(ids, texts, "premise")
    summary.update(threshold=threshold, review_band=list(embeddings.REVIEW_BAND), groups=int(grouped["group"].nunique())
                   if len(grouped) else 0, templates_in_groups=len(grouped),
                   paraphrase=embeddings.similarity_summary(ids, texts, "paraphrase"))
    return pd.DataFrame(rows), summary


def summarise(audit: pd.DataFrame) -> pd.DataFrame:
    """Per dimension (and in total): the counts and shares the authors work down."""
    def stats(frame: pd.DataFrame) -> dict:
        intimate = frame[frame["track"] == "intimate"]
        guessed = intimate[intimate["region_guess"] != bank_metadata.UNSPECIFIED]
        return {
            "templates": len(frame),
            "agreement_error_templates": int(frame["agreement_errors"].map(bool).sum()),
            "advice_question_share": round(float(frame["advice_question"].mean()), 3),
            "in_near_duplicate_group": int(frame["near_duplicate_group"].notna().sum()),
            "intimate_region_english": int(guessed["english_speaking_guess"].eq(True).sum()),
            "intimate_region_other": int(guessed["english_speaking_guess"].eq(False).sum()),
            "intimate_region_unspecified": len(intimate) - len(guessed),
            "flagged_third_party_wording": int(frame["flagged_third_party_wording"].map(len).sum()),
            "they_count": int(frame["they_count"].sum()),
            "with_exclamation": int(frame["exclamations"].gt(0).sum()),
            "beyond_style_bounds": int(frame["problems"].map(
                lambda ps: any(p.startswith("style: ") for p in ps)).sum()),
            "partner_occupations_named": int(frame["partner_occupation_guess"].notna().sum()),
            "partner_occupations_stereotyped": int(frame["partner_occupation_stereotype_guess"]
                                                   .isin(["female", "male"]).sum()),
        }
    rows = [{"dimension": d, **stats(f)} for d, f in audit.groupby("dimension", sort=False)]
    rows.append({"dimension": "ALL", **stats(audit)})
    return pd.DataFrame(rows).set_index("dimension")


def exclamations_by_style(audit: pd.DataFrame) -> pd.DataFrame:
    """Share of templates with at least one '!', and '!' per template, by style."""
    return audit.groupby("style").agg(
        templates=("exclamations", "size"),
        share_with_exclamation=("exclamations", lambda s: round(float(s.gt(0).mean()), 3)),
        exclamations_per_template=("exclamations", lambda s: round(float(s.mean()), 2)))


def main(argv: list[str] | None = None) -> int:
    """The command line: `audit [--json FILE] [--templates PATH]`."""
    from gama_utils.bench.templates import load_templates

    parser = argparse.ArgumentParser(prog="python -m gama_utils.bench.bank_audit")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("audit", help="audit the template bank against the v2 checks")
    run.add_argument("--json", type=Path, help="write the per-template findings and the summary here")
    run.add_argument("--templates", help="a .jsonl file or folder (default data/templates)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    bank = load_templates(args.templates)
    audit, similarity = audit_bank(bank)
    table, styles, devices = summarise(audit), exclamations_by_style(audit), wording.style_table(bank)
    print(table.to_string())
    print()
    print(styles.to_string())
    print()
    print(devices.to_string(index=False))
    print()
    print(f"premise similarity over {similarity['n_pairs']:,} pairs: percentiles {similarity['percentiles']}, "
          f"max {similarity['max']}; {similarity['templates_in_groups']} templates in {similarity['groups']} groups "
          f"at >= {similarity['threshold']}")
    paraphrase = similarity["paraphrase"]
    print(f"paraphrase similarity: percentiles {paraphrase['percentiles']}, max {paraphrase['max']}; closest pairs:")
    for pair in paraphrase["top_pairs"][:10]:
        print(f"  {pair['similarity']:.3f} {pair['id_a']} {pair['id_b']}")
    if args.json:
        payload = {"summary": table.reset_index().to_dict("records"), "exclamations_by_style":
                   styles.reset_index().to_dict("records"), "style_devices": devices.to_dict("records"),
                   "similarity": similarity,
                   "templates": {r["template_id"]: r for r in audit.to_dict("records")}}
        args.json.write_text(json.dumps(payload, ensure_ascii=False, indent=1, default=str) + "\n", encoding="utf-8")
        log.info("wrote %s", args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
