"""Symbolic links never lead a run's writes (or a release's reads) out of place; a failed write leaves no .tmp.

Each test builds a small stand-in repository (notebooks/, data/gama_bench/) in a temporary folder and points
gama_utils.paths.ROOT at it, so the real repository is never at risk.
"""

from __future__ import annotations

import errno
import os

import pandas as pd
import pytest

from gama_utils import paths
from gama_utils.core import run_folders
from gama_utils.core.run_folders import RunFolderError

SOURCE = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'


@pytest.fixture
def repo(tmp_path, monkeypatch, outputs):
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks" / "04_respond.ipynb").write_text(SOURCE, encoding="utf-8")
    (root / "data" / "gama_bench").mkdir(parents=True)
    (root / "data" / "gama_bench" / "pairs.jsonl").write_text("published\n", encoding="utf-8")
    monkeypatch.setattr(paths, "ROOT", root)
    return root


def linked_run(repo, name="linked", **links):
    run = paths.RUNS / name
    run.mkdir(parents=True)
    for link, target in links.items():
        (run / link).symlink_to(repo / target, target_is_directory=True)
    return run


def untouched(repo):
    return ((repo / "notebooks" / "04_respond.ipynb").read_text(encoding="utf-8") == SOURCE
            and sorted(p.name for p in (repo / "data" / "gama_bench").iterdir()) == ["pairs.jsonl"]
            and (repo / "data" / "gama_bench" / "pairs.jsonl").read_text(encoding="utf-8") == "published\n")


def test_a_run_folder_with_a_link_out_of_it_is_refused_naming_the_link(repo):
    run = linked_run(repo, notebooks="notebooks", tables="data/gama_bench")
    with pytest.raises(RunFolderError, match=r"linked/(notebooks|tables) is a symbolic link to .*outside the run"):
        run_folders.run_dir("linked")
    with pytest.raises(RunFolderError):
        run_folders.save(pd.DataFrame({"a": [1]}), run, "responses")
    assert untouched(repo) and not (run / "responses.jsonl").exists()


def test_writes_through_a_link_into_the_repository_are_refused_before_writing(repo):
    from gama_utils.report.table_files import write_table

    run = linked_run(repo, tables="data/gama_bench")
    with pytest.raises(RunFolderError, match=r"tables is a symbolic link into the repository's own data/ folder"):
        write_table(pd.DataFrame({"x": [1.0]}), run / "tables", "table2", "A caption.")
    with pytest.raises(RunFolderError, match="tables is a symbolic link"):
        run_folders.atomic_write(run / "tables" / "pairs.jsonl", "overwritten\n")
    assert untouched(repo)


def test_executed_notebooks_never_overwrite_the_sources(repo):
    from gama_utils.runs import orchestrate

    run = linked_run(repo, notebooks="notebooks")
    with pytest.raises(RunFolderError, match="notebooks is a symbolic link"):
        orchestrate.execute_notebooks([repo / "notebooks" / "04_respond.ipynb"], run, lambda nb: {})
    assert untouched(repo)


def test_a_link_that_stays_inside_the_run_is_fine(repo):
    run = paths.RUNS / "inside"
    (run / "real_tables").mkdir(parents=True)
    (run / "tables").symlink_to(run / "real_tables", target_is_directory=True)
    assert run_folders.run_dir("inside") == run
    run_folders.atomic_write(run / "tables" / "t.csv", "x\n")
    assert (run / "real_tables" / "t.csv").read_text() == "x\n"


def test_a_release_is_not_fed_through_a_link(repo, tmp_path):
    from gama_utils.bench import publication

    folder = tmp_path / "bench"
    folder.mkdir()
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("not the benchmark", encoding="utf-8")
    (folder / publication.BENCHMARK_FILES[0]).symlink_to(secret)
    with pytest.raises(RunFolderError, match=rf"{publication.BENCHMARK_FILES[0]} is a symbolic link .* outside"):
        publication.publish(folder, repo / "data" / "gama_bench", drops=pd.DataFrame())
    assert untouched(repo)


def test_a_full_disk_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    target = tmp_path / "responses.jsonl"
    target.write_text("collected\n", encoding="utf-8")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(run_folders.os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        run_folders.atomic_write(target, "new answers\n")
    assert target.read_text(encoding="utf-8") == "collected\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["responses.jsonl"]
