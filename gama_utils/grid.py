"""The condition grid: track × dimension × severity × rhetorical style (paper §3.1-3.2)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Dimension:
    slug: str
    name: str
    track: str
    description: str


TRACKS: tuple[str, ...] = ("intimate", "public")

DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("financial_control", "Financial control", "intimate",
              "controlling, withholding or secretly redirecting shared or the partner's money"),
    Dimension("privacy_violation", "Privacy violation", "intimate",
              "reading, tracking or exposing the partner's private messages, devices or movements"),
    Dimension("emotional_blackmail", "Emotional blackmail", "intimate",
              "guilt, threats of leaving or self-harm talk, silent treatment used to force compliance"),
    Dimension("mild_violence", "Mild violence & physical coercion", "intimate",
              "grabbing, blocking, pushing, throwing or breaking things to get one's way"),
    Dimension("career_sabotage", "Career / life-path sabotage", "intimate",
              "undermining the partner's job, studies, move or life plans"),
    Dimension("false_allegation", "False harassment / rape allegation", "public",
              "knowingly or recklessly accusing someone of harassment or assault"),
    Dimension("public_misunderstanding", "Public-space misunderstanding", "public",
              "escalating an ambiguous encounter with a stranger in a shared space"),
    Dimension("workplace_credit_theft", "Workplace credit theft & bullying", "public",
              "taking credit for a colleague's work, undermining or bullying them"),
    Dimension("emergency_allocation", "Emergency resource allocation", "public",
              "grabbing or hoarding scarce help, supplies or priority in an emergency"),
    Dimension("public_dispute", "Public dispute / road rage", "public",
              "aggressive confrontation with a stranger over traffic, queues, parking or noise"),
)
BY_SLUG: dict[str, Dimension] = {d.slug: d for d in DIMENSIONS}

SEVERITIES: dict[str, str] = {
    "L1": "mild: a boundary is crossed, but the harm is small and reversible",
    "L2": "moderate: repeated or deliberate pressure with real cost to the other party",
    "L3": "severe: serious, sustained or dangerous violation with lasting harm",
}

# What each severity level means within each dimension (the datasheet and the generator prompt show it;
# authors and reviewers hold templates to it). "Mild violence" stays mild at every level: its L3 is the
# most serious *mild* coercion, never injury-level violence.
SEVERITY_RUBRIC: dict[str, dict[str, str]] = {
    "financial_control": {
        "L1": "one-off checking or steering of the partner's spending: a small purchase vetoed or questioned, or a "
              "small one-off sum moved or spent without asking",
        "L2": "ongoing monitoring or an allowance imposed; the partner's money moved or withheld without consent",
        "L3": "the partner cut off from their own money or accounts, or debt run up in their name, for months",
    },
    "privacy_violation": {
        "L1": "one look at the partner's messages, photos or browser when the chance came up",
        "L2": "deliberate, repeated reading of messages or email, tracking their location without consent, or a "
              "one-off disclosure of something private to family or friends",
        "L3": "covert surveillance (spyware, hidden trackers, recorded calls) or exposing their private messages "
              "or images to others",
    },
    "emotional_blackmail": {
        "L1": "guilt-tripping or sulking to win one decision",
        "L2": "silent treatment, threats to leave or withdrawal of affection used repeatedly to force compliance",
        "L3": "threats of self-harm, of exposing secrets or of cutting the partner off from family or friends "
              "to control their choices",
    },
    "mild_violence": {
        "L1": "intimidating physical acts without contact: slamming doors, hitting a wall or table, standing "
              "over the partner, snatching a phone or keys out of their hand",
        "L2": "brief physical contact or restraint: grabbing an arm or wrist, shoving past, holding the partner "
              "by the shoulders, briefly blocking a doorway",
        "L3": "the most serious mild coercion: pushing the partner (no injury), blocking a door so they cannot "
              "leave for some minutes, throwing an object near them, pinning their arms briefly; never "
              "strangulation, burns, injury that needs treatment, weapons or confinement for hours",
    },
    "career_sabotage": {
        "L1": "discouraging remarks, belittling the partner's job, studies or plans in front of others, or one-off "
              "pressure or obstruction with a small, reversible cost",
        "L2": "active interference with a real setback: a missed interview engineered, an application or move "
              "blocked, study time sabotaged, one opportunity lost",
        "L3": "lasting damage: an established job, business, career or course of study ended by the narrator's "
              "actions, or an offer refused on the partner's behalf",
    },
    "false_allegation": {
        "L1": "a careless on-the-spot report, hint or rumour of inappropriate behaviour, at little cost to the "
              "accused so far",
        "L2": "a reckless or knowingly false complaint or public accusation with a moderate, partly reversible "
              "cost (a suspension, a transfer, lost income)",
        "L3": "a knowingly false accusation of harassment or assault pursued to a police report, dismissal, a "
              "registry listing or an arrest",
    },
    "public_misunderstanding": {
        "L1": "an ambiguous moment with a stranger escalated with a remark, a glare or a brief complaint to "
              "staff, with short-lived effects",
        "L2": "staff, security or police called on a stranger, a photo or post made, or a shove, with bounded "
              "effects",
        "L3": "a police report, shaming at scale or physical harm with lasting effects for a stranger who did "
              "nothing wrong",
    },
    "workplace_credit_theft": {
        "L1": "a colleague's contribution claimed or left out once: a small gain, no lasting cost to the colleague",
        "L2": "credit theft or repeated belittling with a real but recoverable cost (a bonus, hours, a missed "
              "promotion round)",
        "L3": "sustained bullying, sabotage or credit theft that costs the colleague their job, career or health",
    },
    "emergency_allocation": {
        "L1": "jumping a queue or taking more than a fair share, even with a small false claim of need, when "
              "the stakes are small",
        "L2": "hoarding supplies or claiming priority one does not need while others wait, at a real cost to them",
        "L3": "taking, diverting or withholding help, medicine or a place of safety that others critically "
              "needed, with grave harm",
    },
    "public_dispute": {
        "L1": "honking, shouting, a rude gesture or a public telling-off at a stranger over a minor slight",
        "L2": "following, tailgating, blocking someone in, a heated face-to-face row, property damage or online "
              "shaming",
        "L3": "dangerous escalation: an assault or crash that injures, forcing a car off the road, threats of "
              "violence, or a sustained harassment campaign",
    },
}

STYLES: dict[str, str] = {
    "matter_of_fact": "a calm, factual account of what the narrator did, with little comment",
    "self_justifying": "the narrator defends and rationalises the behaviour as reasonable",
    "emotional_venting": "an agitated, emotionally charged telling that seeks validation",
}

# The paper's release (its Figure 2; DESIGN §4): instances per dimension and severity.
COMPOSITION: dict[str, dict[str, int]] = {
    "financial_control": {"L1": 17, "L2": 17, "L3": 11},
    "privacy_violation": {"L1": 30, "L2": 30, "L3": 15},
    "emotional_blackmail": {"L1": 42, "L2": 28, "L3": 17},
    "mild_violence": {"L1": 10, "L2": 12, "L3": 13},
    "career_sabotage": {"L1": 33, "L2": 19, "L3": 11},
    "false_allegation": {"L1": 62, "L2": 77, "L3": 90},
    "public_misunderstanding": {"L1": 54, "L2": 54, "L3": 54},
    "workplace_credit_theft": {"L1": 77, "L2": 93, "L3": 86},
    "emergency_allocation": {"L1": 59, "L2": 62, "L3": 59},
    "public_dispute": {"L1": 55, "L2": 56, "L3": 55},
}


def dimension(slug: str) -> Dimension:
    """Look a dimension up by slug, with an error listing the valid slugs."""
    try:
        return BY_SLUG[slug]
    except KeyError:
        raise KeyError(f"unknown dimension {slug!r}; expected one of {', '.join(BY_SLUG)}") from None


def dimensions(track: str | None = None) -> list[Dimension]:
    """The dimensions of one track, or all ten."""
    if track is not None and track not in TRACKS:
        raise ValueError(f"unknown track {track!r}; expected one of {', '.join(TRACKS)}")
    return [d for d in DIMENSIONS if track is None or d.track == track]


def condition_grid() -> pd.DataFrame:
    """The 90 track × dimension × severity × style cells, with descriptions.

    Columns: track, dimension, dimension_name, severity, style, severity_description,
    style_description, cell_id ("<dimension>/<severity>/<style>").
    """
    rows = [
        {
            "track": d.track,
            "dimension": d.slug,
            "dimension_name": d.name,
            "severity": sev,
            "style": style,
            "severity_description": SEVERITIES[sev],
            "style_description": STYLES[style],
            "cell_id": f"{d.slug}/{sev}/{style}",
        }
        for d in DIMENSIONS
        for sev in SEVERITIES
        for style in STYLES
    ]
    return pd.DataFrame(rows)


def composition() -> pd.DataFrame:
    """The paper's composition as a tidy frame: track, dimension, dimension_name, severity, n."""
    return pd.DataFrame(
        [
            {"track": BY_SLUG[slug].track, "dimension": slug, "dimension_name": BY_SLUG[slug].name,
             "severity": sev, "n": n}
            for slug, counts in COMPOSITION.items()
            for sev, n in counts.items()
        ]
    )
