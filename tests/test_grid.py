from gama_utils import grid


def test_condition_grid_has_90_unique_cells():
    cells = grid.condition_grid()
    assert len(cells) == 90 == 10 * 3 * 3
    assert cells.cell_id.is_unique
    assert set(cells.track) == {"intimate", "public"}
    assert cells.groupby("track").dimension.nunique().to_dict() == {"intimate": 5, "public": 5}
    assert (cells.groupby("dimension").size() == 9).all()


def test_styles_are_three_with_descriptions():
    assert len(grid.STYLES) == 3 and all(len(d) > 20 for d in grid.STYLES.values())


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
