"""Variant comparisons (paper §4.3, Fig 9) follow from each variant's family, size, post-training and thinking."""

import pandas as pd

from gama_utils.analysis import ablation, paper


def variants(rows):
    return pd.DataFrame(rows, columns=list(ablation.VARIANT_COLUMNS))


def test_the_paper_qwen_variants_give_the_paper_panels():
    table = ablation.variant_table(paper.model_aliases("sim", paper.QWEN_VARIANTS))
    found = [(c.title, c.models) for c in ablation.comparisons(table)]
    assert found == [
        ("Scale", ("sim/Qwen3-0.6B", "sim/Qwen3-1.7B", "sim/Qwen3-4B", "sim/Qwen3-8B")),
        ("Post-training", ("sim/Qwen3-4B-Base", "sim/Qwen3-4B-Instruct-2507")),
        ("Reasoning mode", ("sim/Qwen3-4B-Instruct-2507", "sim/Qwen3-4B-Thinking-2507")),
    ]


def test_any_family_is_compared_by_its_attributes():
    table = variants([
        ("toy-8b", "Toy", 8.0, "instruct", False, None), ("toy-1b", "Toy", 1.0, "instruct", False, None),
        ("toy-8b-base", "Toy", 8.0, "base", None, None), ("toy-8b-think", "Toy", 8.0, "instruct", True, None),
        ("solo", "Other", None, None, None, None),
    ])
    found = [(c.title, c.models) for c in ablation.comparisons(table)]
    assert found == [("Scale", ("toy-1b", "toy-8b")), ("Post-training", ("toy-8b-base", "toy-8b")),
                     ("Reasoning mode", ("toy-8b", "toy-8b-think"))]


def test_two_scale_series_are_labelled_and_nothing_compares_without_attributes():
    table = variants([("a1", "A", 1.0, "instruct", False, None), ("a2", "A", 2.0, "instruct", False, None),
                      ("b1", "B", 1.0, "instruct", False, None), ("b2", "B", 2.0, "instruct", False, None)])
    titles = [c.title for c in ablation.comparisons(table)]
    assert titles == ["Scale (A, instruct, thinking off)", "Scale (B, instruct, thinking off)"]
    assert ablation.comparisons(variants([("x", "X", None, None, None, None)])) == []


def test_inline_specs_carry_variant_fields():
    table = ablation.variant_table([{"base_url": "http://127.0.0.1:9/v1", "model": "toy/t-3b", "family": "Toy",
                                     "size_b": 3, "post_training": "instruct", "thinking": False}])
    assert table.iloc[0].to_dict() == {"model": "openai-compatible:toy/t-3b", "family": "Toy", "size_b": 3.0,
                                       "post_training": "instruct", "thinking": False, "release": None}


def test_short_names_drop_the_shared_prefix():
    models = ("sim/Qwen3-0.6B", "sim/Qwen3-8B")
    assert [ablation.short_name(m, models) for m in models] == ["0.6B", "8B"]
    assert ablation.short_name("only", ("only",)) == "only"
