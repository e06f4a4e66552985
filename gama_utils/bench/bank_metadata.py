"""Per-template metadata for stratified analysis: setting region, partner occupation, affected third party.

- `setting_region`: where the story takes place, as an ISO 3166-1 alpha-2 country code from
  data/lexicons/regions.csv (GeoNames country list), or "unspecified" when the text names no place.
  A region is English-speaking when regions.csv says so (US, GB, IE, CA, AU, NZ).
- `partner_occupation` (intimate track only): the partner's occupation when the text names one, as
  the `occupation` of a row of data/lexicons/occupations.csv; the text must contain that occupation or
  one of its variants. It is the job the person holds at the time of the events, also where the events
  cost it (the role a judge reads). Null when the text names none.
- `narrator_occupation` (both tracks): the narrator's own occupation when the text names it ("I'm a
  nurse", "I work as a cashier"), by the same table and rule. The narrator is the actor, a man in the
  male-actor prompt and a woman in the female-actor prompt.
- `occupation_stereotype` and `narrator_occupation_stereotype` are derived, never authored: the
  row's `stereotype`, "female" when at least 70% of US workers in the occupation are women, "male"
  when at most 30% are, else "none"
  (FiveThirtyEight's "male-flight-attendants" table, IPUMS 2012 American Community Survey).
- `affected_third_party`: who besides the narrator is harmed or involved, from THIRD_PARTIES (for the
  public track, the other party of the story; "none" when nobody else is involved).

The mapping rule (one for every reader, and for the table's variants): a job is recorded as a row only
when it belongs to that row's `source_category`, the IPUMS OCC1990 category (as FiveThirtyEight named it)
the census would code the job in; the row's `pct_women` is that category's figure. So a structural engineer
is a civil engineer; a school's lab technician is not in "Clinical laboratory technologies and technicians";
a secondary-school teacher is not in "Teachers", which the source counts apart from kindergarten, primary,
secondary and special-education teachers and college instructors; "Managers and administrators" (n.e.c.)
takes only managers with no more specific category (not a hotel's, a care home's, a property's or a bank
branch's manager), as "Not-elsewhere-classified engineers" and "Physical scientists" take only what no
other category does. A variant is another name of a job in the row's category and shares its figure. A job
whose category has no row is not recorded, even when the text uses another row's word ("manager",
"analyst"); a row is added only with a category and figure of the source. The job is the one the person
holds at the time of the events, also where the events cost it.

The guessing helpers (`place_mentions`, `occupation_mentions`, `second_reading`) are a rule-based second
reader: the audit lists their guesses, the datasheet counts where they disagree with the recorded values;
they are not used to fill the fields.
"""

from __future__ import annotations

import re
from functools import cache

import pandas as pd

from gama_utils.core.patterns import trie_alternation
from gama_utils.paths import DATA

LEXICONS = DATA / "lexicons"
UNSPECIFIED = "unspecified"
THIRD_PARTIES: tuple[str, ...] = (
    "none", "child", "parent", "in_law", "sibling", "other_relative", "friend", "coworker", "subordinate", "manager",
    "client", "neighbour", "stranger", "service_worker", "official", "group",
)
STEREOTYPES = ("female", "male", "none")
FEMALE_AT_LEAST, MALE_AT_MOST = 70.0, 30.0


@cache
def regions() -> pd.DataFrame:
    """The closed region vocabulary: code, name, continent, english_speaking (bool)."""
    frame = pd.read_csv(LEXICONS / "regions.csv", keep_default_na=False)
    return frame.assign(english_speaking=frame["english_speaking"].eq("yes"))


@cache
def occupations() -> pd.DataFrame:
    """The occupations table: occupation, variants (list), source_category, pct_women, stereotype."""
    frame = pd.read_csv(LEXICONS / "occupations.csv", keep_default_na=False)
    return frame.assign(variants=frame["variants"].map(lambda v: [x for x in v.split("|") if x]))


def stereotype_of(pct_women: float) -> str:
    """'female' (at least 70% women), 'male' (at most 30% women) or 'none'."""
    return "female" if pct_women >= FEMALE_AT_LEAST else "male" if pct_women <= MALE_AT_MOST else "none"


def occupation_stereotype(occupation: str | None) -> str | None:
    """The gender-stereotype direction of a table occupation (None for no occupation)."""
    if occupation is None or (isinstance(occupation, float) and pd.isna(occupation)):
        return None
    table = occupations().set_index("occupation")
    if occupation not in table.index:
        raise ValueError(f"unknown occupation {occupation!r}; add it to data/lexicons/occupations.csv")
    return str(table.at[occupation, "stereotype"])


def validate_region(code: str) -> str:
    """`code` when it is in the region vocabulary, else a ValueError naming the vocabulary."""
    if code != UNSPECIFIED and code not in set(regions()["code"]):
        raise ValueError(f"setting_region {code!r} is not an ISO 3166-1 alpha-2 code of data/lexicons/regions.csv "
                         f"(e.g. 'GB', 'JP') nor {UNSPECIFIED!r}")
    return code


def validate_occupation(occupation: str, field: str = "partner_occupation") -> str:
    """`occupation` when it is a row of the occupations table, else a ValueError naming `field`."""
    if occupation not in set(occupations()["occupation"]):
        raise ValueError(f"{field} {occupation!r} is not an occupation of data/lexicons/occupations.csv")
    return occupation


def validate_third_party(value: str) -> str:
    """`value` when it is in THIRD_PARTIES, else a ValueError listing them."""
    if value not in THIRD_PARTIES:
        raise ValueError(f"affected_third_party {value!r} is not one of {', '.join(THIRD_PARTIES)}")
    return value


def known_value(field: str, value: object) -> str | None:
    """A model-given metadata value in its vocabulary (region code, table occupation, third party), else None.

    A region may be given by code in any case or by its name; an occupation by any of its variants.
    """
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if field == "setting_region":
        table = regions()
        by_name = {name.lower(): code for code, name in zip(table["code"], table["name"])}
        code = text.upper() if text.upper() in set(table["code"]) else by_name.get(text.lower())
        return code if code is not None else (UNSPECIFIED if text.lower() == UNSPECIFIED else None)
    if field in ("partner_occupation", "narrator_occupation"):
        if text in set(occupations()["occupation"]):
            return text
        found = occupation_mentions(text)
        return found[0]["occupation"] if found else None
    if field == "affected_third_party":
        key = text.lower().replace("-", "_").replace(" ", "_")
        return key if key in THIRD_PARTIES else None
    raise ValueError(f"unknown metadata field {field!r}")


def _surface_pattern(forms: list[str]) -> re.Pattern:
    alternatives = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?:s|es)?(?![\w-])", re.IGNORECASE)


@cache
def _occupation_patterns() -> list[tuple[str, re.Pattern]]:
    return [(row.occupation, _surface_pattern([row.occupation, *row.variants])) for row in occupations().itertuples()]


def occupation_in_text(occupation: str, text: str) -> bool:
    """Whether `text` names `occupation` or one of its variants (plural allowed)."""
    return any(name == occupation and pattern.search(text) for name, pattern in _occupation_patterns())


def occupation_mentions(text: str) -> list[dict]:
    """Occupations named in `text`, longest match first: occupation, surface, partner (said of the partner?)."""
    found: list[dict] = []
    taken: list[tuple[int, int]] = []
    matches = [(m, name) for name, pattern in _occupation_patterns() for m in pattern.finditer(text)]
    for match, name in sorted(matches, key=lambda x: (-(x[0].end() - x[0].start()), x[0].start())):
        if any(match.start() < end and start < match.end() for start, end in taken):
            continue
        taken.append((match.start(), match.end()))
        said_of_partner = _PARTNER_IS.search(text[: match.start()]) is not None
        found.append({"occupation": name, "surface": match.group(0), "partner": said_of_partner,
                      "stereotype": occupation_stereotype(name), "position": match.start()})
    return sorted(found, key=lambda f: f["position"])


# The partner is the one doing the job: "[PARTNER_SUBJ] works as a", "my [PARTNER], a", "[PARTNER_DET] job as a".
_PARTNER_IS = re.compile(
    r"(?:(?:\[PARTNER_SUBJ\]|[Mm]y \[PARTNER\])\s+(?:is|was|works|worked|trained|had been|has been|became|"
    r"qualified|retrained|had just qualified|started|has a job|had a job)\b|[Mm]y \[PARTNER\],|"
    r"\[PARTNER_DET\]\s+(?:\w+\s+){0,2}(?:job|work|career|training|post|role|position|shifts?)\s+as\b)"
    r"[^.;!?\[]{0,60}$")


# The narrator states their own job: "I'm a nurse", "I work as a dispatcher", "I was the storekeeper at ...",
# "I teach ..." (not "I'm not a doctor", not a job someone else does).
_NARRATOR_IS = re.compile(
    r"\bI(?:'m| am| was|'ve been| have been| had been| work(?:ed)? as| trained as| qualified as| teach| drive)\s+"
    r"(?!not\b|no\b|working with\b|seeing\b)", re.IGNORECASE)
_SENTENCE = re.compile(r"[^.!?]+[.!?]*")


def narrator_occupation_guess(text: str) -> str | None:
    """The rule-based reading of the narrator's own occupation: the first table occupation named within six words
    after a first-person job statement ("I'm a", "I work as a", "I was the", "I teach"), not of the partner."""
    for sentence in _SENTENCE.findall(text):
        for statement in _NARRATOR_IS.finditer(sentence):
            window = " ".join(sentence[statement.end():].split()[:6])
            found = [m for m in occupation_mentions(window) if not m["partner"]]
            if found:
                return found[0]["occupation"]
    return None


def partner_occupation_guess(text: str) -> str | None:
    """The rule-based reading of the partner's occupation: the first table occupation said of the partner."""
    found = [m for m in occupation_mentions(text) if m["partner"]]
    return found[0]["occupation"] if found else None


def second_reading(template: dict) -> dict[str, str | None]:
    """The rule-based second reader of a template's metadata: region from the places named, the partner's
    occupation (intimate track) and the narrator's; third parties have no rule and are not read."""
    intimate = template.get("track") == "intimate"
    return {"setting_region": region_guess(template["text"]),
            "partner_occupation": partner_occupation_guess(template["text"]) if intimate else None,
            "narrator_occupation": narrator_occupation_guess(template["text"])}


SECOND_READING_FIELDS = ("setting_region", "partner_occupation", "narrator_occupation")
REVIEWS = DATA / "bank_reviews"


def second_reading_disagreements(templates: pd.DataFrame) -> pd.DataFrame:
    """Where the rule-based second reader and the recorded metadata differ: template_id, field, recorded, rule.

    A missing value reads as "" (recorded or rule); the partner's occupation is read on the intimate track only.
    """
    rows = []
    for t in templates.to_dict("records"):
        reading = second_reading(t)
        for field in SECOND_READING_FIELDS:
            if field == "partner_occupation" and t.get("track") != "intimate":
                continue
            recorded = t.get(field) if isinstance(t.get(field), str) else ""
            rule = reading[field] or ""
            if recorded != rule:
                rows.append({"template_id": t["template_id"], "field": field, "recorded": recorded, "rule": rule})
    return pd.DataFrame(rows, columns=["template_id", "field", "recorded", "rule"])


def reviewed_disagreements(path=None) -> pd.DataFrame:
    """The authors' verdicts on the second reader's disagreements (data/bank_reviews/metadata_disagreements.csv)."""
    frame = pd.read_csv(path or REVIEWS / "metadata_disagreements.csv", keep_default_na=False, dtype=str)
    return frame[["template_id", "field", "recorded", "rule", "verdict"]]


@cache
def _places() -> tuple[dict[str, str], re.Pattern]:
    table = pd.read_csv(LEXICONS / "places.csv", keep_default_na=False)
    by_name = dict(zip(table["name"], table["country"]))
    return by_name, re.compile(r"(?<![\w])(" + trie_alternation(by_name) + r")(?![\w])")


def place_mentions(text: str) -> list[tuple[str, str]]:
    """Places of the gazetteer (data/lexicons/places.csv) named in `text`, as (name, country code), in order.

    A capitalised word at the start of a sentence is not read as a place (it may be an ordinary word).
    """
    by_name, pattern = _places()
    return [(m.group(1), by_name[m.group(1)]) for m in pattern.finditer(text) if not _starts_sentence(text[:m.start()])]


def _starts_sentence(before: str) -> bool:
    """Whether a word after `before` starts a sentence: only spaces before it, or . ! ? (then a quote) and spaces."""
    rest = before.rstrip()
    if not rest:
        return True
    if rest[-1] in "\"'“":
        rest = rest[:-1].rstrip()
    return bool(rest) and rest[-1] in ".!?"


def region_guess(text: str) -> str:
    """First guess at setting_region: the country named most often (ties: first named), else 'unspecified'."""
    mentions = place_mentions(text)
    if not mentions:
        return UNSPECIFIED
    counts = pd.Series([code for _, code in mentions])
    order = {code: i for i, code in reversed(list(enumerate(counts)))}
    return max(counts.value_counts().items(), key=lambda kv: (kv[1], -order[kv[0]]))[0]


def english_speaking(code: str) -> bool | None:
    """Whether a region code is English-speaking (None for 'unspecified')."""
    if code == UNSPECIFIED:
        return None
    return _english_by_code()[code]


@cache
def _english_by_code() -> dict[str, bool]:
    table = regions()
    return dict(zip(table["code"], table["english_speaking"].astype(bool)))


def metadata_problems(template: dict) -> list[str]:
    """Metadata that contradicts the text: an occupation the text does not name, or a partner's on the public track."""
    problems = []
    for field in ("partner_occupation", "narrator_occupation"):
        occupation = template.get(field)
        if occupation is None or (isinstance(occupation, float) and pd.isna(occupation)):
            continue
        if field == "partner_occupation" and template.get("track") != "intimate":
            problems.append(f"partner_occupation {occupation!r} on a {template.get('track')}-track template "
                            "(intimate only)")
        elif not occupation_in_text(occupation, template["text"]):
            problems.append(f"{field} {occupation!r} does not occur in the text (nor any of its variants)")
    return problems
