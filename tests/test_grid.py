import re

import pytest

from gama_utils.core import grid


@pytest.mark.paper_shape
def test_condition_grid_has_90_unique_cells():
    """The paper's grid: ten dimensions, five per track, 90 cells."""
    cells = grid.condition_grid()
    assert len(cells) == 90 == 10 * 3 * 3
    assert cells.cell_id.is_unique
    assert set(cells.track) == {"intimate", "public"}
    assert cells.groupby("track").dimension.nunique().to_dict() == {"intimate": 5, "public": 5}
    assert (cells.groupby("dimension").size() == 9).all()


def test_styles_are_three_with_descriptions():
    assert len(grid.STYLES) == 3 and all(len(d) > 20 for d in grid.STYLES.values())


@pytest.mark.paper_shape
def test_composition_matches_the_paper_figure_2():
    comp = grid.composition()
    assert comp.n.sum() == 1298
    assert comp.groupby("track").n.sum().to_dict() == {"intimate": 305, "public": 993}
    by_dim = comp.groupby("dimension").n.sum()
    assert by_dim["false_allegation"] == 229 and by_dim["workplace_credit_theft"] == 256
    assert by_dim["mild_violence"] == 35 and by_dim["emotional_blackmail"] == 87


def test_unknown_names_raise_clear_errors():
    import pytest

    with pytest.raises(KeyError, match="financial_control"):
        grid.dimension("finance")
    with pytest.raises(ValueError, match="intimate"):
        grid.dimensions("private")


def _grid_file(tmp_path, edit):
    import yaml

    spec = yaml.safe_load(grid.GRID_FILE.read_text(encoding="utf-8"))
    edit(spec)
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.paper_shape
def test_the_grid_file_declares_what_the_paper_fixes():
    assert grid.active_file() == grid.GRID_FILE
    assert grid.TRACKS == ("intimate", "public") and list(grid.SEVERITIES) == ["L1", "L2", "L3"]
    assert all(set(d.severity_rubric) == {"L1", "L2", "L3"} for d in grid.DIMENSIONS)
    assert grid.COMPOSITION == {d.slug: d.paper_counts for d in grid.DIMENSIONS}
    assert "never strangulation" in grid.SEVERITY_RUBRIC["mild_violence"]["L3"]


@pytest.mark.parametrize(("edit", "message"), [
    (lambda s: s["dimensions"]["financial_control"].update(track="domestic"),
     "dimensions.financial_control.track: 'domestic' is not one of intimate, public"),
    (lambda s: s["dimensions"]["privacy_violation"]["severity_rubric"].pop("L2"),
     "dimensions.privacy_violation.severity_rubric: needs exactly L1, L2, L3"),
    (lambda s: s["dimensions"]["public_dispute"].update(paper_counts={"L1": 3}),
     "dimensions.public_dispute.paper_counts: needs exactly L1, L2, L3"),
    (lambda s: s["tracks"].update(online="conflicts online"), "gama_utils.bench.mirror knows how to mirror only"),
    (lambda s: s["dimensions"].update({"Bad-Slug": s["dimensions"]["public_dispute"]}),
     "dimensions.Bad-Slug: a slug is lower-case letters and underscores"),
    (lambda s: s["dimensions"]["public_dispute"].update(colour="red"), "colour"),
])
def test_a_bad_grid_file_is_refused_naming_the_field(tmp_path, edit, message):
    path = _grid_file(tmp_path, edit)
    with pytest.raises(grid.GridError, match=re.escape(message)):
        grid.load_grid(path)
    with pytest.raises(grid.GridError), grid.use(path):
        pass
    assert grid.active_file() == grid.GRID_FILE and len(grid.condition_grid()) == 9 * len(grid.BY_SLUG)


def test_use_activates_another_grid_in_place_and_restores_the_repository_grid(tmp_path):
    by_slug = grid.BY_SLUG
    cells, total = len(grid.condition_grid()), grid.composition()["n"].sum()
    dispute = grid.composition().query("dimension == 'public_dispute'")["n"].sum()  # 166 in the paper
    path = _grid_file(tmp_path, lambda s: s["dimensions"].pop("public_dispute"))
    with grid.use(path):
        assert grid.BY_SLUG is by_slug and "public_dispute" not in by_slug and len(grid.condition_grid()) == cells - 9
        assert grid.composition()["n"].sum() == total - dispute
    assert "public_dispute" in by_slug and grid.composition()["n"].sum() == total
