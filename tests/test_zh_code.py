"""tools/zh_code.py: the Chinese edition's code, and the checks that each edition reads in its own language only."""

import nbformat
import pytest

from tools.course import lesson_files
from tools.lesson_copies import edition_file, learner_copy, with_chinese_code
from tools.zh_code import (
    chinese_left,
    comment_units,
    different_numbers,
    english_left,
    kept_english,
    load_catalog,
    problems,
    string_units,
    translate,
)

CODE = """\
x = torch.arange(6)  # six numbers
# the same storage,
# read with other strides
y = x.view(2, 3)
    # indented on its own
print("rows and columns:", y.shape, reduction="mean")
loss = F.cross_entropy(z, t, reduction="mean")
print(f"mean of {name!r}: {value:.3f}")
"""
CATALOG = {
    "comment": {
        "# six numbers": "# 六个数",
        "# the same storage,\n# read with other strides": "# 同一块存储，换一组步幅来读",
    },
    "string": {
        '"rows and columns:"': '"行数与列数："',
        'f"mean of {name!r}: {value:.3f}"': 'f"{name!r} 的均值：{value:.3f}"',
    },
    "keep": [],
}


def test_comments_come_as_units_a_sentence_across_lines_is_one():
    units = [(first, last, column, text) for first, last, column, text in comment_units(CODE)]
    assert units == [
        (0, 0, 21, "# six numbers"),
        (1, 2, 0, "# the same storage,\n# read with other strides"),
        (4, 4, 4, "# indented on its own"),
    ]


def test_shown_strings_are_found_and_code_values_are_not():
    found = [text for _, text in string_units(CODE)]
    # "mean" as reduction= is a value; printed, or with spaces between words, a string is read by people
    assert found == ['"rows and columns:"', '"mean"', 'f"mean of {name!r}: {value:.3f}"']


def test_a_word_that_a_condition_or_a_table_picks_is_shown_a_plain_value_is_not():
    code = 'label = "yes" if ok else "no "\nwhere = {True: "inside", False: "BatchNorm"}\nmode = "reflect"\n'
    assert [text for _, text in string_units(code)] == ['"yes"', '"no "', '"inside"', '"BatchNorm"']


def test_translate_replaces_what_the_catalog_lists_and_nothing_else():
    chinese = translate(CODE, CATALOG)
    assert chinese.splitlines() == [
        "x = torch.arange(6)  # 六个数",
        "# 同一块存储，换一组步幅来读",
        "y = x.view(2, 3)",
        "    # indented on its own",  # not in the catalog: left as written, and the check reports it
        'print("行数与列数：", y.shape, reduction="mean")',
        'loss = F.cross_entropy(z, t, reduction="mean")',
        'print(f"{name!r} 的均值：{value:.3f}")',
    ]
    compile(chinese, "cell", "exec")


def test_translate_counts_columns_in_characters_after_chinese_text():
    code = 'label = "步"; print("the step size:", 1)\n'  # ast gives byte columns; Chinese takes 3 bytes
    assert translate(code, {"comment": {}, "string": {'"the step size:"': '"步长："'}}) == (
        'label = "步"; print("步长：", 1)\n'
    )


def test_a_writefile_cell_is_translated_like_any_cell_its_magic_kept():
    code = '%%writefile ddp/train.py\n# one rank\nraise RuntimeError(f"rank {rank} stopped on purpose")\n'
    catalog = {
        "comment": {"# one rank": "# 一个 rank"},
        "string": {'f"rank {rank} stopped on purpose"': 'f"rank {rank} 按计划停下"'},
    }
    assert translate(code, catalog) == (
        '%%writefile ddp/train.py\n# 一个 rank\nraise RuntimeError(f"rank {rank} 按计划停下")\n'
    )


def test_an_operator_that_continues_a_line_is_not_taken_for_a_magic():
    code = "same = (a\n    != b  # not equal\n    % 2)\n"
    assert translate(code, {"comment": {"# not equal": "# 不相等"}, "string": {}}) == code.replace(
        "not equal", "不相等"
    )


def test_a_cell_that_does_not_compile_is_left_alone():
    code = "with torch.no_grad：\n    pass  # a typographic colon, shown on purpose\n"
    assert translate(code, CATALOG) == code


def cell(kind: str, source: str, outputs: list | None = None, tags: tuple = ()) -> dict:
    made = {"cell_type": kind, "source": source, "metadata": {"tags": list(tags)}}
    if kind == "code":
        made["outputs"] = outputs or []
    return made


def stream(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


def test_english_left_in_the_chinese_edition_is_found_unless_kept():
    notebook = {
        "cells": [
            cell("markdown", "这是 `torch.cat` 的例子。"),  # code spans are code, not English prose
            cell("code", "# 沿第 0 维拼接\nprint('结果：', x)", [stream("结果： tensor([1, 2])\n")]),
            cell("code", "# the rows of x\nprint(y)", [stream("view size is not compatible with input\n")]),
        ]
    }
    found = english_left(notebook, keep=[])
    assert [line.split(":")[0] for line in found] == ["cell 2 comment", "cell 2 output"]
    assert english_left(notebook, keep=["the rows of x", "view size is not compatible with input tensor"]) == []


def test_chinese_left_in_the_english_edition_is_found_but_full_width_punctuation_alone_is_not():
    notebook = {
        "cells": [
            cell("code", "in_text = 'print（1）'  # a full-width bracket, shown on purpose", [stream("ok\n")]),
            cell("code", "print('loss / 损失')", [stream("loss / 损失\n")]),
        ]
    }
    assert [line.split(":")[0] for line in chinese_left(notebook)] == ["cell 1 string", "cell 1 output"]


def test_numbers_must_match_cell_by_cell_in_any_order_within_the_cell():
    english = {"cells": [cell("code", "", [stream("mean 0.5, rows 3\n")]), cell("code", "", [stream("epoch 2\n")])]}
    chinese = {"cells": [cell("code", "", [stream("3 行，均值 0.5\n")]), cell("code", "", [stream("第 2 轮\n")])]}
    assert different_numbers(english, chinese) == []
    chinese["cells"][1]["outputs"] = [stream("第 3 轮\n")]
    assert different_numbers(english, chinese) == [
        "code cell 2: English only {'2': 1}, Chinese only {'3': 1}, images 0 vs 0"
    ]
    timing = cell("code", "", [stream("3.1 ms\n")], tags=("nbval-ignore-output",))
    assert different_numbers({"cells": [timing]}, {"cells": [cell("code", "", [stream("2.9 毫秒\n")])]}) == []
    image = {"output_type": "display_data", "data": {"image/png": "", "text/plain": "<Figure>"}}
    chinese["cells"][1]["outputs"] = [stream("第 2 轮\n"), image]
    assert "images 0 vs 1" in different_numbers(english, chinese)[0]


@pytest.mark.parametrize("path", lesson_files(), ids=lambda p: p.name[:2])
def test_each_edition_reads_in_its_own_language_with_the_same_numbers(path):
    """The Chinese edition is up to date with the lesson and its catalog, translated throughout, holds no English
    but what the catalog keeps, and shows the English edition's numbers; the English edition holds no Chinese."""
    assert problems(path) == []
    # and so do the learner's copies made from them, exercises stubbed in the copy's language
    catalog = load_catalog(path)
    keep = kept_english(catalog)
    chinese = learner_copy(nbformat.read(edition_file(path, "zh"), as_version=4), "zh")
    assert english_left(chinese, keep) == []
    assert chinese_left(learner_copy(nbformat.read(path, as_version=4), "en")) == []


def test_the_chinese_workspace_and_book_use_the_chinese_editions_code(tmp_path):
    lesson = lesson_files()[6]
    chinese = nbformat.read(edition_file(lesson, "zh"), as_version=4)
    assert edition_file(lesson, "zh").parent.name == "zh" and edition_file(lesson, "en") == lesson
    copied = learner_copy(chinese, "zh")
    english = nbformat.read(lesson, as_version=4)
    merged = with_chinese_code(english, chinese)
    first_code = next(c for c in merged.cells if c.cell_type == "code")
    assert first_code.source == next(c for c in chinese.cells if c.cell_type == "code").source
    assert [c.cell_type for c in merged.cells] == [c.cell_type for c in english.cells]  # prose of both kept
    assert copied.metadata["course_language"] == "zh"
