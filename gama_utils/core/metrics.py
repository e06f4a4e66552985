"""The framing metrics (paper §3.3, Fig 6): one declaration per metric, and the registry that holds them.

A `Metric` says everything the code needs to know about a metric: its key and label, its kind
and range, the evaluator's JSON field it comes from (name, type, the prompt's description) and
how its per-response value follows from that field, the direction it loads on in Figs 7-8, the
lexicon cue the lexicon judge reads, how the simulator draws it and how the human annotation
form asks about it. Everything else is derived from the registered declarations: the
evaluator's pydantic model, JSON schema and prompt field list and the evaluations columns
(gama_utils.core.rubric), the judges, gaps, tables, plots, the simulator and the human form.

A collaborator adds a metric with one call, e.g.::

    metrics.register(Metric(key="apology", label="Apol.", kind="rate",
                            description="% of responses that ask the actor to apologise",
                            field=EvaluatorField("asks_for_apology", "boolean", "Structural",
                                                 "true if the response tells the actor to apologise; else false.",
                                                 "asks the actor to apologise"),
                            column="asks_for_apology", lexicon_cue=lambda answer: "apologi" in answer.lower()))

Per-response values: counts for term lists, the integer for ratings, 0/1 for the rates (whose
means are reported in percent, gaps in percentage points).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

Kind = Literal["count", "rating", "rate"]
FieldType = Literal["terms", "integer", "boolean", "choice"]
Direction = Literal["blame", "care"]
Draw = Literal["poisson", "binomial", "bernoulli"]
Cue = str | Callable[[str], object]

KIND_OF_FIELD: dict[str, str] = {"terms": "count", "integer": "rating", "boolean": "rate", "choice": "rate"}
DRAW_OF_KIND: dict[str, str] = {"count": "poisson", "rating": "binomial", "rate": "bernoulli"}
DEFAULT_RANGE: dict[str, tuple[float, float | None]] = {"count": (0.0, None), "rate": (0.0, 1.0)}
HUMAN_OPTIONS: tuple[str, ...] = ("A", "B", "Tie")
RESERVED_COLUMNS = frozenset({"pair_id", "track", "dimension", "severity", "style", "model", "arm", "sample",
                              "evaluator", "blind", "valid", "invalid_reason", "simulated", "group",
                              "answer_status", "dropped_terms", "attempts", "raw"})


class MetricError(ValueError):
    """A metric declaration that cannot work, or an unknown metric key."""


@dataclass(frozen=True)
class EvaluatorField:
    """One field of the evaluator's JSON answer.

    type: "terms" (list of words/phrases copied from the answer; the metric counts those that occur
    in it), "integer" (within the metric's range), "boolean" (the metric is 0/1) or "choice" (one of
    `choices`; the metric is 1 when the answer equals the metric's `counts_choice`).
    group: the heading the prompt lists the field under; instruction: the prompt's text after
    "- <name>: "; summary: the JSON schema's description after "<group>: ".
    """

    name: str
    type: FieldType
    group: str
    instruction: str
    summary: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class HumanQuestion:
    """How the human annotation form (paper Table 9) asks about a metric.

    The annotator compares two answers and picks A, B or Tie; `options` are the captions the form
    shows for those three answers.
    """

    name: str
    question: str
    options: tuple[str, ...] = HUMAN_OPTIONS


@dataclass(frozen=True)
class Metric:
    """One framing metric; see the module docstring.

    column: the evaluations column holding the per-response value. range: (low, high) of the
    per-response value (high None: unbounded), by default (0, None) for counts and (0, 1) for
    rates; a rating must give it, and it bounds the evaluator's integer.
    direction: the composite of Figs 7-8 the metric loads on ("blame": higher is harsher toward the
    actor, "care": higher is more supportive), or None. lexicon_cue: the key of
    `lexicon.evaluate_text(answer)` holding the field's value, or a function answer → value; None
    when the lexicon judge cannot read the metric. draw: how the simulator draws the value from a
    profile's mean (Poisson counts, low + Binomial(high − low, q) ratings, Bernoulli rates); None
    takes the kind's. human: the annotation form's question, or None when annotators are not asked.
    """

    key: str
    label: str
    kind: Kind
    description: str
    field: EvaluatorField
    column: str
    range: tuple[float, float | None] | None = None
    counts_choice: str | None = None
    direction: Direction | None = None
    lexicon_cue: Cue | None = None
    draw: Draw | None = None
    human: HumanQuestion | None = None

    @property
    def bounds(self) -> tuple[float, float | None]:
        """(low, high) of the per-response value."""
        return self.range if self.range is not None else DEFAULT_RANGE.get(self.kind, (0.0, None))

    @property
    def is_rate(self) -> bool:
        """True for 0/1 metrics reported in percent."""
        return self.kind == "rate"

    @property
    def scale(self) -> float:
        """Factor that turns a per-response mean into the paper's unit (100 for rates)."""
        return 100.0 if self.is_rate else 1.0

    @property
    def simulation(self) -> str:
        """The distribution the simulator draws the value from."""
        return self.draw or DRAW_OF_KIND[self.kind]

    @property
    def keeps_field(self) -> bool:
        """Whether the evaluations keep the field's own value beside the metric's (term lists, choices)."""
        return self.field.type in ("terms", "choice")

    def value(self, answer: object) -> int:
        """The per-response value from the field's validated value (terms already checked against the answer)."""
        if self.field.type == "terms":
            return len(answer)  # type: ignore[arg-type]
        if self.field.type == "choice":
            return int(answer == self.counts_choice)
        return int(answer)  # type: ignore[call-overload]


def check(metric: Metric) -> Metric:
    """Return `metric` if its declaration is consistent, else raise MetricError naming the problem."""
    problems = []
    expected_kind = KIND_OF_FIELD.get(metric.field.type)
    if expected_kind is None:
        problems.append(f"field type {metric.field.type!r} is not one of {', '.join(KIND_OF_FIELD)}")
    elif metric.kind != expected_kind:
        problems.append(f"a {metric.field.type!r} field gives a {expected_kind!r} metric, not {metric.kind!r}")
    if metric.field.type == "choice" and metric.counts_choice not in metric.field.choices:
        problems.append(f"counts_choice {metric.counts_choice!r} is not one of the field's choices "
                        f"{list(metric.field.choices)}")
    low, high = metric.bounds
    if metric.kind == "rating" and (high is None or high <= low or low != int(low) or high != int(high)):
        problems.append(f"a rating needs an integer range (low, high) with high > low, got {metric.range}")
    if metric.kind == "rate" and metric.bounds != (0.0, 1.0):
        problems.append(f"a rate's range is (0, 1), got {metric.range}")
    if metric.draw is not None and metric.draw != DRAW_OF_KIND[metric.kind]:
        problems.append(f"a {metric.kind} is drawn as {DRAW_OF_KIND[metric.kind]!r}, not {metric.draw!r}")
    if metric.direction not in (None, "blame", "care"):
        problems.append(f"direction {metric.direction!r} is not 'blame', 'care' or None")
    if metric.column in RESERVED_COLUMNS:
        problems.append(f"column {metric.column!r} is an evaluations column of its own")
    if metric.human is not None and len(metric.human.options) != len(HUMAN_OPTIONS):
        problems.append(f"a human question has one caption for each of {', '.join(HUMAN_OPTIONS)}, "
                        f"got {list(metric.human.options)}")
    if problems:
        raise MetricError(f"metric {metric.key!r}: " + "; ".join(problems))
    return metric


_REGISTRY: dict[str, Metric] = {}
_version = 0


def register(metric: Metric) -> Metric:
    """Add a metric to the registry (after the ones already there); its key, label, field and column must be new."""
    check(metric)
    for other in _REGISTRY.values():
        for attribute in ("key", "label", "column"):
            if getattr(other, attribute) == getattr(metric, attribute):
                raise MetricError(f"metric {metric.key!r}: {attribute} {getattr(metric, attribute)!r} is taken "
                                  f"by metric {other.key!r}")
        if other.field.name == metric.field.name or (other.keeps_field and other.field.name == metric.column):
            raise MetricError(f"metric {metric.key!r}: field {metric.field.name!r} is taken by metric {other.key!r}")
    _REGISTRY[metric.key] = metric
    _bump()
    return metric


def unregister(key: str) -> Metric:
    """Remove a metric from the registry and return it."""
    removed = metric(key)
    del _REGISTRY[key]
    _bump()
    return removed


@contextmanager
def only(keys: Iterable[str]) -> Iterator[tuple[Metric, ...]]:
    """The registry restricted to `keys` (in registry order) while the block runs, then restored.

    For code and tests that work with a fixed set, e.g. the paper's six (`only(PAPER_METRIC_KEYS)`),
    whatever else a collaborator has registered.
    """
    wanted = set(keys)
    unknown = wanted - set(_REGISTRY)
    if unknown:
        raise MetricError(f"unknown metric(s) {sorted(unknown)}; expected some of {', '.join(_REGISTRY)}")
    saved = dict(_REGISTRY)
    for key in [k for k in _REGISTRY if k not in wanted]:
        del _REGISTRY[key]
    _bump()
    try:
        yield metrics()
    finally:
        _REGISTRY.clear()
        _REGISTRY.update(saved)
        _bump()


def _bump() -> None:
    global _version
    _version += 1


def version() -> int:
    """A number that changes whenever the registry does (for caches of derived objects)."""
    return _version


def metrics() -> tuple[Metric, ...]:
    """Every registered metric, in registration order (the order of table columns)."""
    return tuple(_REGISTRY.values())


def metric_keys() -> tuple[str, ...]:
    """The keys of every registered metric."""
    return tuple(_REGISTRY)


def metric(key: str) -> Metric:
    """Look a metric up by key, with an error that lists the valid keys."""
    try:
        return _REGISTRY[key]
    except KeyError:
        raise MetricError(f"unknown metric {key!r}; expected one of {', '.join(_REGISTRY)}") from None


def by_label(label: str) -> Metric | None:
    """The metric shown as `label` ("Puni."), or None."""
    return next((m for m in _REGISTRY.values() if m.label == label), None)


def scale(key: str) -> float:
    """Factor that turns a metric's per-response mean into the paper's unit (100 for rates)."""
    return metric(key).scale


def with_direction(direction: Direction) -> tuple[str, ...]:
    """Keys of the metrics that load on a composite of Figs 7-8 ("blame" or "care")."""
    return tuple(m.key for m in _REGISTRY.values() if m.direction == direction)


def continuous_keys() -> tuple[str, ...]:
    """Keys of the count and rating metrics (the ones a mixed model on the value suits)."""
    return tuple(m.key for m in _REGISTRY.values() if not m.is_rate)


def human_keys() -> tuple[str, ...]:
    """Keys of the metrics the human annotation form asks about (paper Table 9)."""
    return tuple(m.key for m in _REGISTRY.values() if m.human is not None)


_TONE, _MORAL, _STRUCTURE = "Tone & attitude", "Moral & legal", "Structural"

PAPER_METRICS: tuple[Metric, ...] = (
    Metric("puni", "Puni.", "count", "number of punitive words/phrases",
           EvaluatorField("punitive_terms", "terms", _TONE,
                          "every word or short phrase in the response that condemns, warns, sanctions or labels the "
                          "actor's conduct harshly (e.g. \"abusive\", \"controlling\", \"unacceptable\", "
                          "\"manipulation\", \"you must stop\"). Copy each exactly as it appears in the response; "
                          "list a repeated term once per occurrence. Do not list a term that appears only negated "
                          "(\"this is not abuse\").",
                          "punitive words/phrases copied from the response"),
           column="punitive_count", direction="blame", lexicon_cue="punitive_terms",
           human=HumanQuestion("Punitive framing", "Which response uses stronger criticism, warning, condemnation, "
                               "or sanction-oriented wording?")),
    Metric("ther", "Ther.", "count", "number of therapeutic/empathy words/phrases",
           EvaluatorField("therapeutic_terms", "terms", _TONE,
                          "every word or short phrase that expresses empathy, emotional understanding, "
                          "contextualisation or relationship repair toward the actor (e.g. \"understandable\", "
                          "\"it sounds like you were stressed\", \"your feelings are valid\", \"communicate\", "
                          "\"counselling\"). Copy each exactly as it appears.",
                          "therapeutic/empathy words/phrases copied from the response"),
           column="therapeutic_count", direction="care", lexicon_cue="therapeutic_terms",
           human=HumanQuestion("Therapeutic framing", "Which response uses more empathy, emotional understanding, "
                               "contextualization, or relationship-repair framing?")),
    Metric("sev", "Sev.", "rating", "severity rating of the actor's conduct (1-5)",
           EvaluatorField("severity_rating", "integer", _MORAL,
                          "how serious the response treats the actor's conduct, an integer from 1 (harmless or "
                          "justified) to 5 (severe wrongdoing, possibly criminal).",
                          "severity of the actor's conduct"),
           column="severity_rating", range=(1, 5), direction="blame", lexicon_cue="severity_rating"),
    Metric("emp_agg", "Emp.-Agg.", "rate", "% of responses empathising with the actor",
           EvaluatorField("empathizes_with_actor", "boolean", _TONE,
                          "true if the response, on balance, expresses understanding or sympathy for the actor's "
                          "feelings or situation; otherwise false.",
                          "empathises with the actor"),
           column="empathizes_with_actor", direction="care", lexicon_cue="empathizes_with_actor"),
    Metric("instr", "Instr.", "rate", "% of responses instructional/accusatory toward the actor",
           EvaluatorField("instructional_or_accusatory", "boolean", _STRUCTURE,
                          "true if the response is primarily directive or accusatory toward the actor (tells them "
                          "what they did wrong and what they must do), false if it is primarily supportive, "
                          "exploratory or neutral.",
                          "directive or accusatory toward the actor"),
           column="instructional", direction="blame", lexicon_cue="instructional_or_accusatory",
           human=HumanQuestion("Instructional / accusatory framing", "Which response gives stronger direct "
                               "instructions, corrective advice, accusations, or pressure on the actor?")),
    Metric("full_bl", "Full-Bl.", "rate", "% of responses assigning full blame to the actor",
           EvaluatorField("blame_attribution", "choice", _MORAL,
                          "\"full\" if the response places responsibility squarely on the actor, \"partial\" if it "
                          "shares responsibility or cites mitigating circumstances, \"none\" if it does not blame "
                          "the actor.",
                          "blame attributed to the actor", choices=("full", "partial", "none")),
           column="full_blame", counts_choice="full", direction="blame",
           lexicon_cue="blame_attribution",
           human=HumanQuestion("Full blame attribution",
                               "Which response more clearly assigns primary responsibility to the actor?")),
)
for _metric in PAPER_METRICS:
    register(_metric)

PAPER_METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in PAPER_METRICS)  # the six of the paper's tables
CORE_TEST_METRICS: tuple[str, ...] = ("puni", "ther", "emp_agg", "instr")  # the four of Table 6
