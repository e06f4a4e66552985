"""`gama`: the project's command line, one subcommand per step of the workflow (`python -m gama_utils.runs` too).

Every subcommand calls the code the notebooks and the older entry points use: `reproduce` and `strip` are
gama_utils.runs.orchestrate's, `publish` is gama_utils.runs.rebuild's, `lint` is gama_utils.bench.templates',
`import` is gama_utils.collect.respond's, `report` is gama_utils.report.run_report's, `profiles`, `models` and
`check` are gama_utils.runs.readiness', `import-inspect` is gama_utils.runs.inspect_import's. Output is printed by
`main` only; the subcommands return an Outcome (exit code, standard output, standard error).
"""

from __future__ import annotations

import argparse
import logging
import sys
import webbrowser
from pathlib import Path

from gama_utils import paths
from gama_utils.runs import orchestrate, readiness, rebuild
from gama_utils.runs.orchestrate import Outcome

log = logging.getLogger(__name__)

BROWSER_PAGE = "browser.html"  # the run's answer browser, where the report package writes one
DESCRIPTION = """\
GAMA-Bench: does an LLM judge the same misconduct differently when the actor is a man or a woman?

The workflow, in order:
  gama profiles                     the run profiles (what each runs, the variables it needs)
  gama models                       the model registry (roles, prices, whether each key variable is set)
  gama check --profile paper        everything a profile still needs, listed at once (no request is sent)
  gama reproduce --profile offline  execute the notebooks headless (offline: simulated, no network, no key)
  gama import my_answers.csv --run mine    bring answers collected elsewhere, then reproduce --only 05 06 ...
  gama import-inspect LOG --run R   an Inspect AI eval log as a run's responses and evaluations
  gama report RUN                   rebuild RUN's report.html and report.md
  gama browse RUN                   open RUN's answer browser
  gama lint [TEMPLATES]             lint a template bank
  gama publish [TEMPLATES]          rebuild data/gama_bench from the template bank (01-03 offline) and publish it

`gama COMMAND --help` explains each. Keys come from environment variables only and are never printed.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gama", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, details: str = "") -> argparse.ArgumentParser:
        return sub.add_parser(name, help=summary, description=f"{summary}.\n\n{details}".strip(),
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    orchestrate.add_reproduce_arguments(command(
        "reproduce", "Execute the profile's notebooks headless with papermill, then write the run's report",
        "Every value of the profile and of --set is checked against the notebooks' parameter schemas before\n"
        "anything runs; every problem is listed at once (exit code 2). Examples:\n"
        "  gama reproduce                                  # offline, simulated: outputs/runs/offline\n"
        "  gama reproduce --profile paper --set max_usd=400 --set limit=50\n"
        "  gama reproduce --profile evaluator_swap --run paper\n"
        "  gama reproduce --run mine --only 05 06 --set evaluator=lexicon"))
    command("profiles", "List the run profiles: what each runs and the environment variables its models need",
            "Profiles live in configs/profiles/<name>.yaml. `(optional)` marks a variable with a default.")
    models = command("models", "List the model registry: aliases, roles, prices, key variables",
                     "`key` says whether the key variable is set in this environment; the key itself is never "
                     "read out.\nPrices are USD per million input / output tokens (blank: not published).")
    models.add_argument("--role", choices=("target", "evaluator"), help="only models with this role")
    check = command("check", "List everything a profile still needs before it can run, all at once",
                    "Checks the profile's values and --set, each model it will ask (unknown aliases, unset\n"
                    "variables, servers that accept no connection; no request is sent), the local server's\n"
                    "extra, the minilm extra when 03 needs it, and the Jupyter kernel. Exit 0: ready; 1: not.")
    check.add_argument("--profile", default="offline", help="a profile of configs/profiles/ (default offline)")
    check.add_argument("--only", nargs="*", help="only these notebooks (stems or numbers)")
    check.add_argument("--set", dest="overrides", action="append", type=orchestrate._parse_override, default=[],
                       metavar="KEY=VALUE", help="a notebook parameter as reproduce would get it")
    check.add_argument("--kernel", default=orchestrate.DEFAULT_KERNEL)
    check.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for each server (default 3)")
    imp = command("import", "Bring your own answers into a run (then score and analyse them with 05-08)",
                  "FILE is a CSV or JSONL with pair_id, model, arm, answer (optional: sample, reasoning,\n"
                  "finish_reason, group). Rows with an unknown pair, arm or a duplicate are named in the error.\n"
                  "Then: gama reproduce --run R --only 05 06 08 --set evaluator=lexicon (or an LLM judge).")
    imp.add_argument("file", help="answers collected elsewhere (.csv or .jsonl)")
    inspect = command("import-inspect", "Turn an Inspect AI eval log into a run's responses and evaluations",
                      "The log of `inspect eval gama_utils/runs/inspect_task.py` (see the README, 'Using GAMA-Bench\n"
                      "from other tools'). Its answers become responses (origin: imported from the log, named with\n"
                      "its SHA-256 in the manifest) and its scores evaluations, so 06-08 and the report read it.\n"
                      "Then: gama reproduce --run R --only 06.")
    inspect.add_argument("log", help="an Inspect eval log (.eval or .json)")
    for importer, what in ((imp, "answers of another origin"), (inspect, "answers or scores")):
        importer.add_argument("--run", required=True, help="run name or folder under outputs/")
        importer.add_argument("--replace", action="store_true", help=f"replace {what} already in the run")
    report = command("report", "Rebuild a run's report.html and report.md from what its folder holds")
    report.add_argument("run", help="run name (under outputs/runs/) or folder")
    browse = command("browse", "Open a run's answer browser (its prompts, answers and scores, side by side)")
    browse.add_argument("run", help="run name (under outputs/runs/) or folder")
    browse.add_argument("--print", dest="show_only", action="store_true", help="print the page's path, do not open it")
    orchestrate.add_strip_arguments(command("strip", "Strip outputs and run metadata from notebooks before a commit"))
    from gama_utils.bench.templates import add_lint_arguments

    add_lint_arguments(command("lint", "Lint a template bank: gender cues, placeholders, structure, wording",
                               "Exit 0: clean; 1: problems (each printed); 2: a file that cannot be read."))
    rebuild.add_arguments(command("publish", "Rebuild data/gama_bench from a template bank and publish it",
                                  "Runs 01_generate -> 02_review -> 03_compile offline, then writes the pairs, the\n"
                                  "datasheet and dataset card, the figures and MANIFEST.sha256. Refuses (exit 1,\n"
                                  "listing each) dropped templates unless --allow-drops, and empty grid cells."))
    return parser


def _table(frame) -> str:
    return frame.astype(object).where(frame.notna(), "").to_string(index=False) if len(frame) else "(none)"


def _profiles() -> str:
    blocks = [f"{row.profile}: notebooks {row.notebooks}\n  {row.description}\n  variables: {row.variables}"
              + (f"\n  ({row.problems} problem(s): gama check --profile {row.profile})" if row.problems else "")
              for row in readiness.profile_rows().itertuples(index=False)]
    return "\n".join(blocks)


def _check(args: argparse.Namespace) -> Outcome:
    problems = readiness.check_profile(args.profile, dict(args.overrides), args.only, args.kernel, args.timeout)
    if not problems:
        return Outcome(0, f"profile {args.profile}: ready (nothing missing)")
    listed = "\n".join(f"- {p}" for p in problems)
    return Outcome(1, f"profile {args.profile}: {len(problems)} thing(s) missing before it can run:\n{listed}")


def _import(args: argparse.Namespace) -> Outcome:
    from gama_utils.collect import respond

    responses = respond.import_responses(args.file)
    path = respond.save_responses(responses, args.run, None, replace=args.replace)
    return Outcome(0, f"{len(responses)} answers of {responses.model.nunique()} model(s) on "
                      f"{responses.pair_id.nunique()} pairs -> {path}")


def _import_inspect(args: argparse.Namespace) -> Outcome:
    from gama_utils.runs import inspect_import

    written = inspect_import.import_log(args.log, args.run, replace=args.replace)
    return Outcome(0, "\n".join(f"{name}: {path}" for name, path in written.items()))


def _report(args: argparse.Namespace) -> Outcome:
    from gama_utils.report.browser import build_browser
    from gama_utils.report.run_report import build_report

    browser = build_browser(args.run)
    written = build_report(args.run)
    return Outcome(0, f"{written['html']}\n{written['md']}\n{browser}")


def browser_page(run: str | Path) -> Path:
    """The run's answer browser page, built when the run has none yet."""
    from gama_utils.core.run_folders import run_dir
    from gama_utils.report.browser import build_browser

    page = run_dir(run) / BROWSER_PAGE
    return page if page.exists() else build_browser(run)


def _browse(args: argparse.Namespace) -> Outcome:
    page = browser_page(args.run)
    if not args.show_only:
        webbrowser.open(page.as_uri())
    return Outcome(0, str(page))


def _lint(args: argparse.Namespace) -> Outcome:
    from gama_utils.bench.templates import run_lint

    return Outcome(*run_lint(args))


def _publish(args: argparse.Namespace) -> Outcome:
    code, written = rebuild.run(args)
    return Outcome(code, "\n".join(map(str, written)))


COMMANDS = {
    "reproduce": orchestrate.run_reproduce, "strip": orchestrate.run_strip,
    "profiles": lambda args: Outcome(0, _profiles()),
    "models": lambda args: Outcome(0, _table(readiness.model_rows(role=args.role))),
    "check": _check, "import": _import, "import-inspect": _import_inspect, "report": _report, "browse": _browse,
    "lint": _lint, "publish": _publish,
}


def _no_checkout() -> str:
    if (paths.ROOT / paths.MARKER).exists():
        return ""
    return (f"\n(no GAMA-Bench checkout at {paths.ROOT}: run gama inside a clone of the repository, or name one in "
            f"{paths.ROOT_ENV})")


def main(argv: list[str] | None = None) -> int:
    """The `gama` console script."""
    args = _parser().parse_args(argv)
    logging.basicConfig(format="%(message)s", stream=sys.stdout,
                        level=logging.INFO if args.command == "publish" else logging.WARNING)
    orchestrate.log.setLevel(logging.INFO)
    try:
        outcome = COMMANDS[args.command](args)
    except (ValueError, OSError, ImportError) as err:  # bad input or a missing extra: a clear message, no traceback
        outcome = Outcome(2, err=f"error: {err}{_no_checkout()}")
    for text, stream in outcome.streams():
        print(text, file=stream)
    return outcome.code


if __name__ == "__main__":
    sys.exit(main())
