"""Each convention rule catches the break it exists for: a good lesson passes, a broken copy of it fails."""

import copy
import json
import subprocess

import pytest

from tools import course
from tools import notebook_rules as rules

# A full lesson: quoted outputs, figures with captions, errata, a reading box and two exercises.
GOOD = json.loads((course.NOTEBOOK_DIR / "03-scatter.ipynb").read_text(encoding="utf-8"))


def md(text: str, lang: str) -> dict:
    return {"cell_type": "markdown", "metadata": {"tags": [lang]}, "source": text}


def first(nb: dict, predicate) -> dict:
    return next(cell for cell in nb["cells"] if predicate(cell))


def first_code_with_output(nb: dict) -> dict:
    return first(nb, lambda c: c["cell_type"] == "code" and c.get("outputs") and not course.tags(c))


def set_kernel(nb):
    nb["metadata"]["kernelspec"]["name"] = "python2"


def untag_markdown(nb):
    first(nb, lambda c: c["cell_type"] == "markdown")["metadata"]["tags"] = []


def swap_pair(nb):
    nb["cells"][0], nb["cells"][1] = nb["cells"][1], nb["cells"][0]


def drop_chinese_twin(nb):
    del nb["cells"][1]


def chinese_in_english(nb):
    nb["cells"][2]["source"] += "\n张量"


def english_in_chinese(nb):
    nb["cells"][3]["source"] = "## Only English here, `张量` in code does not count"


def no_title(nb):
    nb["cells"][0]["source"] = "Welcome"


def no_setup(nb):
    rules.code_cells(nb)[0]["source"] = "import torch"


def never_executed(nb):
    for cell in rules.code_cells(nb):
        cell["execution_count"], cell["outputs"] = None, []


def out_of_order(nb):
    rules.code_cells(nb)[1]["execution_count"] = 9


def empty_code_cell(nb):
    rules.code_cells(nb)[1]["source"] = ""


def stderr_output(nb):
    first_code_with_output(nb)["outputs"].append({"output_type": "stream", "name": "stderr", "text": "oops\n"})


def warning_in_stdout(nb):
    warning = "/x/ipykernel_1/1.py:2: UserWarning: careful\n"
    first_code_with_output(nb)["outputs"].append({"output_type": "stream", "name": "stdout", "text": warning})


def address_in_output(nb):
    first_code_with_output(nb)["outputs"][0]["text"] = "<torch._C.Generator at 0x7f3a2c1b9e10>"


def path_in_output(nb):
    first_code_with_output(nb)["outputs"][0]["text"] = "saved to /home/ada/model.pt"


def path_in_traceback(nb):
    cell = first(nb, lambda c: "solution" in course.tags(c))
    frame = "File \x1b[0;32m/home/ada/.venv/lib/python3.11/site-packages/torch/nn/functional.py:3555\x1b[0m"
    error = {"output_type": "error", "ename": "ValueError", "evalue": "x", "traceback": ["Cell In[3]", frame]}
    cell["metadata"]["tags"].append("raises-exception")
    cell["outputs"] = [error]


def untagged_error(nb):
    error = {"output_type": "error", "ename": "ValueError", "evalue": "x", "traceback": []}
    first_code_with_output(nb)["outputs"] = [error]


def raises_tag_without_error(nb):
    first_code_with_output(nb)["metadata"]["tags"] = ["raises-exception"]


def ignored_without_reason(nb):
    first_code_with_output(nb)["metadata"]["tags"] = ["nbval-ignore-output"]


def nbval_comment_marker(nb):
    cell = first_code_with_output(nb)
    cell["source"] = "# NBVAL_IGNORE_OUTPUT\n" + course.source(cell)


def stated_output_differs(nb):
    cell = first(nb, lambda c: "```output:" in course.source(c))
    fence = rules.OUTPUT_FENCE.search(course.source(cell))
    quoted = fence.group(2)
    cell["source"] = course.source(cell).replace(quoted, quoted.replace("\n", " (changed)\n", 1), 1)


def chinese_quote_differs_in_the_chinese_edition(nb):
    """In the Chinese edition (notebooks/zh/), the Chinese quotes are compared with its own, Chinese outputs."""
    nb["cells"] = [c for c in nb["cells"] if "lang-en" not in course.tags(c)]
    nb["metadata"]["course_language"] = "zh"
    cell = first(nb, lambda c: "```output:" in course.source(c))
    quoted = rules.OUTPUT_FENCE.search(course.source(cell)).group(2)
    cell["source"] = course.source(cell).replace(quoted, quoted.replace("\n", " （改过）\n", 1), 1)


def predict_without_chinese(nb):
    cell = first(nb, lambda c: "predict" in c.get("metadata", {}))
    cell["metadata"]["predict"] = {"en": cell["metadata"]["predict"]["en"]}


def too_few_worksheet_questions(nb):
    for cell in rules.code_cells(nb)[:-1]:
        cell.get("metadata", {}).pop("predict", None)


def predict_on_a_self_check(nb):
    cell = first(nb, lambda c: c["cell_type"] == "code" and "check_" in course.source(c))
    cell["metadata"]["predict"] = {"en": "What does it print?", "zh": "它会打印什么？"}


def whole_output_quoted(nb):
    cell = first(nb, lambda c: "```output:" in course.source(c) and "lang-en" in course.tags(c))
    name = rules.OUTPUT_FENCE.search(course.source(cell)).group(1)
    stored = first(nb, lambda c: f"output:{name}" in course.tags(c))
    whole = "\n".join(f"line {i}" for i in range(3))
    stored["outputs"] = [{"output_type": "stream", "name": "stdout", "text": whole + "\n"}]
    cell["source"] = f"```output:{name}\n{whole}\n```"


def long_error(nb):
    cell = first_code_with_output(nb)
    cell["metadata"]["tags"] = ["raises-exception"]
    frames = [f"File torch/nn/modules/module.py:{i}, in _call_impl" for i in range(12)]
    cell["outputs"] = [{"output_type": "error", "ename": "ValueError", "evalue": "x", "traceback": frames}]


def exercise_without_prompt(nb):
    first(nb, lambda c: "solution" in course.tags(c))["metadata"].pop("exercise")


def figure_without_caption(nb):
    index = next(
        i for i, c in enumerate(nb["cells"]) if any("image/png" in o.get("data", {}) for o in c.get("outputs", []))
    )
    del nb["cells"][index + 1 : index + 3]


def source_pointer(nb):
    nb["cells"][2]["source"] += "\n\nType `scatter_reference??` to read it."


def italic_chinese(nb):
    nb["cells"][3]["source"] += "\n\n这是*斜体的中文*。"


def space_after_chinese_punctuation(nb):
    nb["cells"][3]["source"] += "\n\n**陷阱。** 这里多了一个空格。"


def chinese_line_break(nb):
    nb["cells"][3]["source"] += "\n\n这一段在句子中间\n换了行。"


def chinese_line_break_before_punctuation(nb):
    """The break sits between a code span and a full-width bracket, the commonest gap the lessons had."""
    nb["cells"][3]["source"] += "\n\n调用 `scatter_(dim, index, src)`\n（见上文）会原地写入。"


def chinese_line_break_before_bold(nb):
    nb["cells"][3]["source"] += "\n\n第一句在这里结束。\n**第二句**从新的一行开始。"


def chinese_line_break_before_number(nb):
    """A line that starts with a digit continues the paragraph unless it is an ordered list item ("1. ")."""
    nb["cells"][3]["source"] += "\n\n先列出节点个数、\n0 号节点的地址和端口。"


def chinese_line_break_after_bold(nb):
    nb["cells"][3]["source"] += "\n\n它也包含所有**缓冲区**\n（不参与训练的状态）。"


def chinese_line_break_after_quote(nb):
    nb["cells"][3]["source"] += "\n\n文档说“不建议使用”。\n全局默认值一改就会出问题。"


def chinese_line_break_after_ellipsis(nb):
    nb["cells"][3]["source"] += "\n\n权重依次是 1、1/2、1/3……\n所以结果是简单平均。"


def chinese_line_break_in_list_item(nb):
    nb["cells"][3]["source"] += "\n\n- 列表项里的一句话，\n  在中间换了行。"


def note_title_in_corner_brackets(nb):
    cell = first(nb, lambda c: "lang-zh" in course.tags(c) and "《pytorch 函数理解》" in course.source(c))
    cell["source"] = course.source(cell).replace("《pytorch 函数理解》", "「pytorch 函数理解」", 1)


def note_title_in_quotation_marks(nb):
    nb["cells"][3]["source"] += "\n\n“Pytorch Note”里的循环直接遍历数据加载器。"


def note_title_bare(nb):
    nb["cells"][3]["source"] += "\n\n笔记 PyTorch 基础_1 里写了这一行。"


def note_title_in_exercise_prompt(nb):
    first(nb, lambda c: "solution" in course.tags(c))["metadata"]["exercise"]["zh"] += "（见「Pytorch Note」）"


def glossary_variant(nb):
    nb["cells"][3]["source"] += "\n\n前向计算很快。"


def second_level_one_title(nb):
    nb["cells"][1]["source"] = "# 第 03 课 · 标题"


def errata_without_note(nb):
    nb["cells"][2:2] = [
        md("## Errata: an old claim", "lang-en"),
        md("## 勘误：一个旧说法", "lang-zh"),
        {"cell_type": "code", "metadata": {}, "source": "1", "outputs": [], "execution_count": None},
    ]


def stated_output_missing_in_chinese(nb):
    cell = first(nb, lambda c: "```output:" in course.source(c) and "lang-zh" in course.tags(c))
    cell["source"] = "只剩下中文说明，没有输出。"


def no_solution(nb):
    for cell in nb["cells"]:
        if "solution" in course.tags(cell):
            cell["metadata"]["tags"] = []


def failing_self_check(nb):
    cells = rules.code_cells(nb)
    solution = next(i for i, c in enumerate(cells) if "solution" in course.tags(c))
    cells[solution + 1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "hint: reseed\n"}]


def errata_without_proof(nb):
    nb["cells"][2:2] = [
        md("## Errata: an old claim", "lang-en"),
        md("## 勘误：一个旧说法", "lang-zh"),
        md("# x", "lang-en"),
    ]


def errata_without_chinese_heading(nb):
    nb["cells"][2:2] = [md("## Errata: an old claim", "lang-en"), md("## 说明：旧说法", "lang-zh")]


def glossary_term_dropped(nb):
    for cell in nb["cells"]:
        if "lang-zh" in course.tags(cell):
            cell["source"] = course.source(cell).replace("张量", "tensor")


def lesson_named_without_link(nb):
    section = first(nb, lambda c: "lang-en" in course.tags(c) and "## " in course.source(c))
    section["source"] += "\n\nAs lesson 04 shows."


def link_to_missing_lesson(nb):
    section = first(nb, lambda c: "lang-en" in course.tags(c) and "## " in course.source(c))
    section["source"] += "\n\n[a](99-gone.ipynb)."


def link_names_another_lesson(nb):
    first(nb, lambda c: "lang-en" in course.tags(c) and "## " in course.source(c))["source"] += (
        "\n\n[lesson 04](05-conv2d.ipynb)."
    )


def chinese_link_to_english_heading(nb):
    """The Chinese-only copy drops English cells, so a Chinese link to an English heading goes nowhere."""
    first(nb, lambda c: "lang-zh" in course.tags(c) and "## " in course.source(c))["source"] += (
        "\n\n见[第 09 课](09-adam.ipynb#Frozen-parameters-and-the-optimizer)。"
    )


BREAKS = [
    (rules.rule_kernelspec, set_kernel),
    (rules.rule_markdown_tagged_and_paired, untag_markdown),
    (rules.rule_markdown_tagged_and_paired, swap_pair),
    (rules.rule_markdown_tagged_and_paired, drop_chinese_twin),
    (rules.rule_language_matches_tag, chinese_in_english),
    (rules.rule_language_matches_tag, english_in_chinese),
    (rules.rule_title_first, no_title),
    (rules.rule_setup_cell_first, no_setup),
    (rules.rule_executed_in_order, never_executed),
    (rules.rule_executed_in_order, out_of_order),
    (rules.rule_executed_in_order, empty_code_cell),
    (rules.rule_clean_outputs, stderr_output),
    (rules.rule_clean_outputs, warning_in_stdout),
    (rules.rule_clean_outputs, address_in_output),
    (rules.rule_clean_outputs, path_in_output),
    (rules.rule_clean_outputs, untagged_error),
    (rules.rule_clean_outputs, path_in_traceback),
    (rules.rule_clean_outputs, raises_tag_without_error),
    (rules.rule_unchecked_cells_say_why, ignored_without_reason),
    (rules.rule_unchecked_cells_say_why, nbval_comment_marker),
    (rules.rule_documented_outputs, stated_output_differs),
    (rules.rule_documented_outputs, stated_output_missing_in_chinese),
    (rules.rule_documented_outputs, chinese_quote_differs_in_the_chinese_edition),
    (rules.rule_worksheet_questions, predict_without_chinese),
    (rules.rule_worksheet_questions, too_few_worksheet_questions),
    (rules.rule_worksheet_questions, predict_on_a_self_check),
    (rules.rule_exercises_self_checked, no_solution),
    (rules.rule_exercises_self_checked, failing_self_check),
    (rules.rule_errata_proven, errata_without_proof),
    (rules.rule_errata_proven, errata_without_chinese_heading),
    (rules.rule_glossary_terms, glossary_term_dropped),
    (rules.rule_glossary_variants, glossary_variant),
    (rules.rule_title_first, second_level_one_title),
    (rules.rule_documented_outputs, whole_output_quoted),
    (rules.rule_short_errors, long_error),
    (rules.rule_exercises_have_bilingual_prompts, exercise_without_prompt),
    (rules.rule_figures_captioned, figure_without_caption),
    (rules.rule_no_source_pointers, source_pointer),
    (rules.rule_no_chinese_italics, italic_chinese),
    (rules.rule_no_space_after_chinese_punctuation, space_after_chinese_punctuation),
    (rules.rule_chinese_paragraphs_on_one_line, chinese_line_break),
    (rules.rule_chinese_paragraphs_on_one_line, chinese_line_break_before_punctuation),
    (rules.rule_chinese_paragraphs_on_one_line, chinese_line_break_before_bold),
    (rules.rule_chinese_paragraphs_on_one_line, chinese_line_break_before_number),
    (rules.rule_chinese_paragraphs_on_one_line, chinese_line_break_after_bold),
    (rules.rule_chinese_paragraphs_on_one_line, chinese_line_break_after_quote),
    (rules.rule_chinese_paragraphs_on_one_line, chinese_line_break_after_ellipsis),
    (rules.rule_chinese_paragraphs_on_one_line, chinese_line_break_in_list_item),
    (rules.rule_note_titles_in_book_brackets, note_title_in_corner_brackets),
    (rules.rule_note_titles_in_book_brackets, note_title_in_quotation_marks),
    (rules.rule_note_titles_in_book_brackets, note_title_bare),
    (rules.rule_note_titles_in_book_brackets, note_title_in_exercise_prompt),
    (rules.rule_errata_proven, errata_without_note),
    (rules.rule_references_resolve, lesson_named_without_link),
    (rules.rule_references_resolve, link_to_missing_lesson),
    (rules.rule_references_resolve, link_names_another_lesson),
    (rules.rule_references_resolve, chinese_link_to_english_heading),
]


def test_every_rule_has_a_break():
    assert {rule for rule, _ in BREAKS} == set(rules.RULES)


@pytest.mark.parametrize("rule", rules.RULES, ids=lambda rule: rule.__name__)
def test_the_good_notebook_passes(rule):
    assert rule(GOOD) == []


@pytest.mark.parametrize(("rule", "breaks"), BREAKS, ids=[b.__name__ for _, b in BREAKS])
def test_rule_catches_break(rule, breaks):
    broken = copy.deepcopy(GOOD)
    breaks(broken)
    problems = rule(broken)
    assert problems, f"{rule.__name__} did not notice {breaks.__name__}"
    assert all(isinstance(p, str) and len(p) > 10 for p in problems)


def test_unexecuted_notebook_fails_more_than_one_rule():
    broken = copy.deepcopy(GOOD)
    never_executed(broken)
    failing = [rule.__name__ for rule in rules.RULES if rule(broken)]
    # raises-exception cells lose their stored error too
    assert failing == [
        "rule_executed_in_order",
        "rule_clean_outputs",
        "rule_documented_outputs",
        "rule_exercises_self_checked",
        "rule_worksheet_questions",
    ]


def test_glossary_loads_terms_from_the_table_only():
    glossary = rules.load_glossary()
    assert glossary["stride"] == "步幅" and glossary["padding"] == "填充" and glossary["tensor"] == "张量"
    assert "English" not in glossary and "logit" not in glossary
    assert len(set(glossary.values())) == len(glossary), "one Chinese term per English term"


def test_a_link_to_a_heading_of_the_cells_language_resolves():
    nb = copy.deepcopy(GOOD)
    first(nb, lambda c: "lang-zh" in course.tags(c) and "## " in course.source(c))["source"] += (
        "\n\n见[第 09 课](09-adam.ipynb#冻结的参数与优化器)。"
    )
    first(nb, lambda c: "lang-en" in course.tags(c) and "## " in course.source(c))["source"] += (
        "\n\nSee [lesson 09](09-adam.ipynb#Frozen-parameters-and-the-optimizer)."
    )
    assert rules.rule_references_resolve(nb) == []


# Issue 24: Chinese cells (JSON indices at commit a7aa3e3) whose soft line breaks showed as gaps, each beside
# full-width punctuation, and which the rule, as it then was, let through.
OLD_COMMIT = "a7aa3e3"
OLD_SOFT_BREAKS = {
    "02": [81],
    "05": [6],
    "06": [9, 32],
    "07": [1],
    "08": [6, 74],
    "10": [11, 26],
    "11": [70, 98],
    "12": [64],
}


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(course.ROOT), *args], capture_output=True, text=True, encoding="utf-8")


@pytest.mark.parametrize("lesson", OLD_SOFT_BREAKS)
def test_the_paragraph_rule_catches_each_gap_issue_24_listed(lesson):
    listing = git("ls-tree", "--name-only", OLD_COMMIT, "notebooks/")
    if listing.returncode != 0:
        pytest.skip(f"commit {OLD_COMMIT} is not in this clone (an archive or a shallow clone)")
    path = next(name for name in listing.stdout.split() if name.startswith(f"notebooks/{lesson}-"))
    old = json.loads(git("show", f"{OLD_COMMIT}:{path}").stdout)
    flagged = {int(p.split(":")[0].removeprefix("cell ")) for p in rules.rule_chinese_paragraphs_on_one_line(old)}
    for index in OLD_SOFT_BREAKS[lesson]:
        assert "lang-zh" in course.tags(old["cells"][index])
        assert index in flagged, f"{path} cell {index}: {course.source(old['cells'][index])[:200]!r}"


CORRECT_CHINESE = """## 一节：标题后面直接是正文
正文是一整行，里面有 `code`、**加粗**、[第 05 课](05-conv2d.ipynb) 和 1、1/2、1/3……都没有换行。

- 列表的第一项；
- 第二项，下面跟着一个子列表：
  - 子项一
  - 子项二
1. 有序列表
2. 第二步

> 引文是一行。

| 参数 | 含义 |
| --- | --- |
| `stride` | 步幅 |

```python
x = 1  # 代码块里的
# 换行不算
```

$$
y = x^2
$$

硬换行（行尾两个空格）可以换行，\x20\x20
也可以用反斜杠，\\
像这样。

An English sentence inside a Chinese cell may wrap between
two English words: that space is a real space.
<details>
<summary>点开</summary>

折叠的内容。
</details>"""


def test_a_correct_chinese_cell_passes_the_paragraph_rule():
    assert rules.soft_breaks(CORRECT_CHINESE) == []
    nb = copy.deepcopy(GOOD)
    nb["cells"][3]["source"] += "\n\n" + CORRECT_CHINESE
    assert rules.rule_chinese_paragraphs_on_one_line(nb) == []


def test_the_glossary_keeps_each_chinese_paragraph_on_one_line():
    assert rules.soft_breaks(rules.GLOSSARY.read_text(encoding="utf-8")) == []


def test_the_note_titles_are_the_titles_of_the_notes():
    """Each title the rules know opens one of the notes (seeds/NNN_*.txt: the title is among the first lines)."""
    seeds = sorted((course.ROOT.parent / "shared" / "seeds").glob("*.txt"))
    if not seeds:
        pytest.skip("the study notes (../shared/seeds) are not next to this clone")
    openings = [
        [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][:3] for path in seeds
    ]
    for title in rules.NOTE_NAMES.values():
        assert any(title in opening for opening in openings), title


def test_the_title_rule_accepts_book_title_marks_and_code():
    nb = copy.deepcopy(GOOD)
    nb["cells"][3]["source"] += "\n\n《Pytorch Note》和《Pytorch基础_1》都这样写；文件名 `Pytorch Note.md` 是代码。"
    assert rules.rule_note_titles_in_book_brackets(nb) == []
