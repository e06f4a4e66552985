"""Human validation of the evaluator-based framing metrics (paper §4.5, App. F, Tables 4 and 9).

Workflow (notebook 08_robustness), one module per step:
1. `validation_set`: `validation_key(responses, evaluations)` samples n items (default 200), an item
   being one target model × mirrored pair, stratified by model × track, with a random A/B order and
   gender-masked answers; `write_key` keeps the key (which side is the female actor, the
   evaluator's scores) with the researcher.
2. `annotation_sheets` and `annotation_form`: `export_sheets(key, out_dir)` writes one sheet per
   annotator, as CSV and as a self-contained HTML form (templates in gama_utils/jinja).
3. `completed_sheets`: `read_completed_sheets(files, key)` returns the A/B/Tie labels, or raises
   AnnotationError listing every problem by file, row, item and field.
4. `agreement`: `validation_summary(labels, key)` (Fleiss' κ per framing, human majority vote,
   evaluator-derived direction, evaluator-human agreement) and `table4(summary, with_paper=True)`.
`simulated_annotators.simulate_annotation` fills exported sheets from the hidden evaluator scores
plus seeded noise so the pipeline runs offline; its sheets, labels and tables all say "simulated".
The framings annotators judge are the metrics that declare a human question (`scale`).

Frames:
key, one row per item: item_id, pair_id, model, track, dimension, severity, style, female_is
    ("A"/"B"), answer_a, answer_b (masked), <framing>_a, <framing>_b (evaluator scores), simulated
sheet, one row per item: item_id, answer_a, answer_b, one label column per framing
labels, one row per annotator × item × framing: annotator, item_id, framing, label, simulated, file
"""

from gama_utils.human.agreement import (
    AGREEMENT_ROW,
    KAPPA_ROW,
    NO_MAJORITY,
    evaluator_direction,
    evaluator_directions,
    evaluator_human_agreement,
    fleiss_kappa,
    fleiss_kappa_by_framing,
    majority_vote,
    paper_table4,
    table4,
    validation_summary,
)
from gama_utils.human.annotation_form import sheet_html
from gama_utils.human.annotation_sheets import (
    DEFAULT_ANNOTATORS,
    SIMULATED_RESPONSES_NOTE,
    annotation_sheet,
    export_sheets,
)
from gama_utils.human.completed_sheets import (
    COMPLETED_SUFFIX,
    AnnotationError,
    Problem,
    annotator_name,
    normalise_label,
    read_completed_sheets,
    read_sheet,
)
from gama_utils.human.scale import LABELS, Framing, framing_keys, framings, key_columns, sheet_columns
from gama_utils.human.simulated_annotators import SIMULATED_ANNOTATORS, simulate_annotation, simulated_labels
from gama_utils.human.validation_set import mirrored_items, read_key, sample_items, validation_key, write_key

__all__ = [
    "AGREEMENT_ROW", "COMPLETED_SUFFIX", "DEFAULT_ANNOTATORS", "KAPPA_ROW", "LABELS", "NO_MAJORITY",
    "SIMULATED_ANNOTATORS", "SIMULATED_RESPONSES_NOTE", "AnnotationError", "Framing", "Problem", "annotation_sheet",
    "annotator_name", "evaluator_direction", "evaluator_directions", "evaluator_human_agreement",
    "export_sheets", "fleiss_kappa", "fleiss_kappa_by_framing", "framing_keys", "framings", "key_columns",
    "majority_vote", "mirrored_items", "normalise_label", "paper_table4", "read_completed_sheets", "read_key",
    "read_sheet",
    "sample_items", "sheet_columns", "sheet_html", "simulate_annotation", "simulated_labels", "table4",
    "validation_key", "validation_summary", "write_key",
]
