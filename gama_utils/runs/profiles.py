"""Run profiles (configs/profiles/<name>.yaml) and `--set` overrides, checked before any notebook runs.

A profile has `parameters` (given to every notebook that declares them), `notebooks` (per-notebook values),
`run` (the notebooks to execute), `server`, `default_run` and `description`. Every value is checked against
the parameter schemas of gama_utils.runs.parameters: unknown keys, notebook names and parameters get the closest
known name, wrong types and ranges are named with the profile file and key, and all problems come at once.
`--set` values override the profile's, for every notebook of the run that declares them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from gama_utils.core import credentials
from gama_utils.paths import CONFIGS, ROOT
from gama_utils.runs import parameters
from gama_utils.runs.parameters import ParameterError, closest


class Profile(BaseModel):
    """A run profile as written in configs/profiles/<name>.yaml."""

    model_config = ConfigDict(extra="forbid")

    description: str | None = None
    default_run: str | None = None
    run: list[str | int] | None = None
    server: dict[str, Any] | None = None
    parameters: dict[str, Any] = {}
    notebooks: dict[str, dict[str, Any] | None] = {}


def profile_path(name: str) -> Path:
    """configs/profiles/<name>.yaml."""
    return CONFIGS / "profiles" / f"{name}.yaml"


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def load_profile(name: str) -> Profile:
    """A profile, checked for its own shape (unknown keys, wrong types); errors name the file and the key."""
    profile, problems = read_profile(name)
    if problems:
        raise ParameterError(problems)
    return profile


def refers_to_itself(value: Any) -> bool:
    """Whether a value read from YAML contains itself (a recursive anchor such as `&a [*a]`), which no parameter
    can be: checking or writing it would recurse forever."""
    def walk(item: Any, open_ids: set[int]) -> bool:
        if not isinstance(item, (dict, list)):
            return False
        if id(item) in open_ids:
            return True
        open_ids.add(id(item))
        children = item.values() if isinstance(item, dict) else item
        found = any(walk(child, open_ids) for child in children)
        open_ids.discard(id(item))
        return found

    return walk(value, set())


def read_profile(name: str) -> tuple[Profile, list[str]]:
    """A profile made of its well-formed keys, and the problems with the others (file and key named)."""
    path = profile_path(name)
    if not path.exists():
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise FileNotFoundError(f"unknown profile {name!r}{closest(name, known)}; known profiles: {', '.join(known)}")
    where = _shown(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        return Profile(), [f"{where}: not UTF-8 text (byte {err.start})"]
    except yaml.YAMLError as err:
        return Profile(), [f"{where}: not valid YAML: {err}"]
    raw = {} if raw is None else raw
    if refers_to_itself(raw):
        return Profile(), [f"{where}: a value refers to itself (a recursive YAML anchor); write the value out"]
    if not isinstance(raw, dict):
        return Profile(), [f"{where}: a profile is a mapping of keys (description, parameters, notebooks, ...), not "
                           f"{type(raw).__name__}"]
    raw = {str(k): v for k, v in raw.items()}
    try:
        return Profile(**raw), []
    except ValidationError as err:
        problems, bad = [], set()
        for error in err.errors():
            key = ".".join(str(part) for part in error["loc"])
            bad.add(str(error["loc"][0]))
            if error["type"] == "extra_forbidden":
                problems.append(f"{where}: {key}: unknown key{closest(key, Profile.model_fields)}; "
                                f"known keys: {', '.join(Profile.model_fields)}")
            else:
                problems.append(f"{where}: {key}: {error['msg']}")
        return Profile(**{k: v for k, v in raw.items() if k not in bad}), list(dict.fromkeys(problems))


def declared(notebook: Path) -> set[str]:
    """The parameters a notebook declares: its schema's fields, or what papermill finds in a notebook without one."""
    if notebook.stem in parameters.SCHEMAS:
        return set(parameters.SCHEMAS[notebook.stem].model_fields)
    import papermill

    return set(papermill.inspect_notebook(str(notebook)))


def select(notebooks: list[Path], wanted: Iterable[str | int] | None, where: str) -> tuple[list[Path], list[str]]:
    """The notebooks named by stem or number (all when none are named), and the names that match none."""
    if not wanted:
        return notebooks, []
    names = [str(w) for w in wanted]
    stems = [nb.stem for nb in notebooks]
    unknown = [f"{where}: {w}: no such notebook{closest(w, stems)}; notebooks: {', '.join(stems)}" for w in names
               if w not in stems and w.zfill(2) not in [s[:2] for s in stems]]
    chosen = [nb for nb in notebooks if nb.stem in names or nb.stem[:2] in [w.zfill(2) for w in names]]
    return chosen, unknown


def _value_problems(notebook: Path, values: Mapping[str, Any], where: str) -> list[str]:
    if notebook.stem in parameters.SCHEMAS:
        return parameters.problems(notebook.stem, values, where)
    return credentials.parameter_problems(values, where)


def plan(profile_name: str, notebooks: list[Path], only: list[str] | None = None,
         overrides: Mapping[str, Any] | None = None) -> tuple[Profile, list[Path], list[str]]:
    """The profile, the notebooks to run, and every problem with the profile, `--only` and `--set` (empty: fine)."""
    profile, problems = read_profile(profile_name)
    where = _shown(profile_path(profile_name))
    overrides = dict(overrides or {})
    chosen, unknown = select(notebooks, only or profile.run, "--only" if only else f"{where}: run")
    problems += unknown
    everywhere = {nb.stem: declared(nb) for nb in notebooks}
    in_run = set().union(*(everywhere[nb.stem] for nb in chosen)) if chosen else set()
    known = set().union(*everywhere.values()) if everywhere else set()
    if profile.server:
        problems += credentials.parameter_problems(profile.server, f"{where}: server")
    for name, values in profile.notebooks.items():
        if name not in everywhere and name not in parameters.SCHEMAS:
            problems.append(f"{where}: notebooks.{name}: no such notebook"
                            f"{closest(name, [*everywhere, *parameters.SCHEMAS])}")
        elif name in everywhere:
            problems += _value_problems(_by_stem(notebooks, name), values or {}, f"{where}: notebooks.{name}")
        else:  # a notebook of the project that this folder of notebooks lacks: its schema still checks the values
            problems += parameters.problems(name, values or {}, f"{where}: notebooks.{name}")
    for source, values in ((f"{where}: parameters", profile.parameters), ("--set", overrides)):
        for name, value in values.items():
            if name == "run_dir":
                problems.append(f"{source}: run_dir: the run folder is chosen with --run (or the profile's "
                                "default_run)")
            elif name not in known:
                secret = credentials.parameter_problems({name: value}, source)
                problems += secret or [f"{source}: {name}: no notebook declares this parameter{closest(name, known)}"]
            elif source == "--set" and name not in in_run:
                users = ", ".join(stem for stem, names in everywhere.items() if name in names)
                problems.append(f"--set: {name}: no notebook of this run declares it (declared by {users})")
            else:
                problems += list(dict.fromkeys(p for nb in chosen if name in everywhere[nb.stem]
                                               for p in _value_problems(nb, {name: value}, source)))
    return profile, chosen, list(dict.fromkeys(problems))


def _by_stem(notebooks: list[Path], stem: str) -> Path:
    return next(nb for nb in notebooks if nb.stem == stem)


def notebook_parameters(profile: Profile, notebook: Path, run_path: Path,
                        overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One notebook's values: the profile's common parameters it declares, its own section, then the `--set` values
    it declares, and run_dir."""
    names = declared(notebook)
    params = {k: v for k, v in profile.parameters.items() if k in names}
    params.update(profile.notebooks.get(notebook.stem) or {})
    params.update({k: v for k, v in (overrides or {}).items() if k in names})
    params["run_dir"] = str(run_path)
    return params
