"""The learner's copies (tools/lesson_copies.py) and workspace (tools/workspace.py): stubs, languages, manifest."""

import json

import nbformat
import pytest

from tools import workspace as ws
from tools.course import CJK, lesson_files
from tools.lesson_copies import (
    ANSWER_MARK,
    ANSWER_MARKS,
    GENERIC_EXERCISE,
    UNSOLVED_CHECK_TAG,
    answer_lines,
    display_width,
    exercises,
    is_solution,
    learner_copy,
    one_language,
    stub_source,
)

LESSONS = lesson_files()


def markdown(source: str, *tags: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(source, metadata={"tags": list(tags)})


def code(source: str, *tags: str, **metadata) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": list(tags), **metadata})
    cell.outputs = [nbformat.v4.new_output("stream", text="✓ Correct / 正确: yes\n")]
    cell.execution_count = 3
    return cell


def lesson(number: str, answer: str = "    return x + 1", prose: str = "We add one.") -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        markdown(f"# {number} · Adding one\n\n{prose}", "lang-en"),
        markdown(f"**第 {number} 课 · 加一**\n\n我们加一。", "lang-zh"),
        code("from companion.course import setup_notebook\n\nsetup_notebook()"),
        markdown("## Exercise\n\nWrite it.", "lang-en"),
        markdown("## 练习\n\n写出来。", "lang-zh"),
        code(f"def add_one(x):\n{answer}", "solution", exercise={"en": "Return x plus one.", "zh": "返回 x 加一。"}),
        code("from companion.checks.demo import check_add_one\n\ncheck_add_one(add_one)"),
    ]
    return notebook


def test_stub_keeps_signatures_imports_and_says_what_to_write():
    source = "import math\n\n\ndef f(a, b=2):\n    '''The area.'''\n    return math.pi * a * b\n\n\nanswer = f(1)\n"
    stub = stub_source(source, {"en": "Compute the area.", "zh": "计算面积。"})
    assert stub.startswith("# Exercise: Compute the area.\n# 练习：计算面积。\n")
    assert "import math" in stub and "def f(a, b=2):" in stub and "'''The area.'''" in stub
    assert "math.pi" not in stub and "answer = ...  # " + ANSWER_MARK in stub
    compile(stub, "stub", "exec")
    assert GENERIC_EXERCISE["zh"] in stub_source("x = 1\n")


def test_stub_text_wraps_at_88_columns_between_words_and_chinese_characters():
    english = "Write `f(x)`: " + "a long instruction that goes on " * 6 + "and ends."
    chinese = "编写 `f(x)`：" + "一段很长的说明，" * 12 + "到此为止。"
    stub = stub_source("def f(x):\n    return x\n", {"en": english, "zh": chinese})
    comments = [line for line in stub.splitlines() if line.startswith("#")]
    assert len(comments) > 4 and all(display_width(line) <= 88 for line in comments)
    assert " ".join(line.removeprefix("#").strip() for line in comments[:2]).startswith(
        "Exercise: Write `f(x)`: a long"
    )
    assert "".join(line.removeprefix("#").strip() for line in comments if CJK.search(line)).endswith("到此为止。")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_every_stub_fits_88_columns_and_speaks_the_copys_language(path):
    notebook = nbformat.read(path, as_version=4)
    for language in ("en", "zh", "both"):
        copied = learner_copy(notebook, language).cells
        stubs = [c.source for c in copied if c.cell_type == "code" and ANSWER_MARKS[language] in c.source]
        assert stubs, "every lesson has an exercise"
        for stub in stubs:
            assert CJK.search(stub.replace("·", "")) if language == "zh" else True
            assert not CJK.search(stub) if language == "en" else True, "the English stub holds no Chinese"
            assert all(display_width(line) <= 90 for line in stub.splitlines()), stub  # 88, or a closing "，" over
            assert ("# Exercise: " in stub) == (language != "zh") and ("# 练习：" in stub) == (language != "en")


def test_learner_copy_stubs_answers_clears_spoilers_and_lets_run_all_go_on():
    copy = learner_copy(lesson("05"))
    solution, check = exercises(copy)[0]
    assert "return x + 1" not in copy.cells[solution].source and "Return x plus one." in copy.cells[solution].source
    assert copy.cells[solution].outputs == [] and copy.cells[check].outputs == []
    assert UNSOLVED_CHECK_TAG in copy.cells[check].metadata["tags"]
    assert lesson("05").cells[6].outputs, "the source notebook is not changed"


def test_one_language_copies():
    zh = one_language(lesson("05"), "zh")
    assert not [c for c in zh.cells if "lang-en" in c.metadata.get("tags", [])]
    assert zh.cells[0].source.startswith("# 第 05 课 · 加一\n"), "the Chinese title becomes the only heading"
    en = one_language(lesson("05"), "en")
    assert not [c for c in en.cells if c.cell_type == "markdown" and CJK.search(c.source)]
    assert len(one_language(lesson("05"), "both").cells) == 7
    with pytest.raises(ValueError, match="language must be one of"):
        one_language(lesson("05"), "fr")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem[:2])
def test_every_lesson_copies_without_its_answers(path):
    source = nbformat.read(path, as_version=4)
    for language in ("en", "zh"):
        copy = learner_copy(source, language)
        other = "lang-en" if language == "zh" else "lang-zh"
        assert not [c for c in copy.cells if other in c.metadata.get("tags", [])]
        assert copy.cells[0].source.startswith("# "), "one title, a level-1 heading"
        answers = [c.source for c in source.cells if is_solution(c)]
        stubs = [c.source for c in copy.cells if is_solution(c)]
        for answer, stub in zip(answers, stubs, strict=True):
            body = answer_lines(answer)
            assert body and not set(body) & set(stub.splitlines()), f"answer lines left in the stub of {path.name}"
            compile(stub, path.name, "exec")


@pytest.fixture
def course(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for number in ("00", "01"):
        nbformat.write(lesson(number), notebooks / f"{number}-add.ipynb")
    (notebooks / "GLOSSARY.md").write_text("| term | 术语 |\n", encoding="utf-8")
    return notebooks, tmp_path / "workspace"


def edit(path, text="    return x + 1  # mine\n"):
    notebook = nbformat.read(path, as_version=4)
    next(c for c in notebook.cells if is_solution(c)).source += "\n" + text
    nbformat.write(notebook, path)


def test_first_sync_copies_everything_and_remembers_the_language(course):
    notebooks, folder = course
    report = ws.Workspace(folder, notebooks).sync("zh")
    assert report.copied == ["00-add.ipynb", "01-add.ipynb", "GLOSSARY.md"]
    assert json.loads((folder / ws.MANIFEST).read_text())["language"] == "zh"
    again = ws.Workspace(folder, notebooks)
    assert again.language == "zh" and again.sync().lines(folder) == []
    assert "lang-en" not in (folder / "00-add.ipynb").read_text()


def test_sync_updates_untouched_lessons_and_keeps_changed_ones(course):
    notebooks, folder = course
    ws.Workspace(folder, notebooks).sync()
    edit(folder / "00-add.ipynb")
    # Running cells changes outputs only: still untouched.
    ran = nbformat.read(folder / "01-add.ipynb", as_version=4)
    ran.cells[2].outputs = [nbformat.v4.new_output("stream", text="Ready\n")]
    nbformat.write(ran, folder / "01-add.ipynb")
    for number in ("00", "01", "02"):  # both lessons updated upstream, one added
        nbformat.write(lesson(number, prose="We add one, again."), notebooks / f"{number}-add.ipynb")

    report = ws.Workspace(folder, notebooks).sync()
    assert report.copied == ["02-add.ipynb"] and report.kept == ["00-add.ipynb"] and report.updated == ["01-add.ipynb"]
    assert "# mine" in (folder / "00-add.ipynb").read_text(), "the learner's change survived"
    text = "\n".join(report.lines(folder, "make lab"))
    assert "make lab REFRESH=00" in text and "你改过" in text


@pytest.mark.parametrize(
    ("command", "suggested"),
    [
        ("make notebook", "make notebook REFRESH=00 WORKSPACE={folder}"),
        ("python3 tools/course.py notebook", "python3 tools/course.py notebook REFRESH=00 WORKSPACE={folder}"),
        (r"py tools\course.py lab", r"py tools\course.py lab REFRESH=00 WORKSPACE={folder}"),
        (None, "python -m tools.workspace refresh 00 --workspace {folder}"),
    ],
)
def test_messages_name_the_command_the_learner_typed(course, command, suggested):
    """`make notebook` must not send the learner to `make lab`, nor a learner without make to make at all."""
    notebooks, folder = course
    ws.Workspace(folder, notebooks).sync()
    edit(folder / "00-add.ipynb")
    nbformat.write(lesson("00", prose="We add one, again."), notebooks / "00-add.ipynb")
    lines = ws.Workspace(folder, notebooks).sync().lines(folder, command)
    assert lines[-1].endswith(": " + suggested.format(folder=folder)), lines
    assert (command == "make notebook") == ("make" in "\n".join(lines)), "make only where the learner typed make"
    assert ws.lesson_command("00-add.ipynb", ws.DEFAULT_WORKSPACE, "make lab") == "make lab REFRESH=00"


def test_a_changed_lesson_that_did_not_change_upstream_is_not_reported(course):
    notebooks, folder = course
    ws.Workspace(folder, notebooks).sync()
    edit(folder / "00-add.ipynb")
    report = ws.Workspace(folder, notebooks).sync()
    assert report.lines(folder) == [] and "# mine" in (folder / "00-add.ipynb").read_text()


def test_a_language_switch_keeps_a_changed_lesson_and_says_so(course):
    notebooks, folder = course
    ws.Workspace(folder, notebooks).sync("en")
    edit(folder / "00-add.ipynb")
    report = ws.Workspace(folder, notebooks).sync("zh")
    assert report.kept_language == ["00-add.ipynb"] and report.kept == [] and report.updated == ["01-add.ipynb"]
    text = "\n".join(report.lines(folder))
    assert "stays in the language it was copied in" in text and "updated in the course" not in text
    assert "# mine" in (folder / "00-add.ipynb").read_text()


def test_refresh_backs_up_the_learners_version(course):
    notebooks, folder = course
    workspace = ws.Workspace(folder, notebooks)
    workspace.sync()
    edit(folder / "00-add.ipynb")
    backup = workspace.refresh("00")
    assert "# mine" in backup.read_text() and backup.parent == folder / ws.BACKUPS
    assert "# mine" not in (folder / "00-add.ipynb").read_text()
    assert ws.Workspace(folder, notebooks).sync().lines(folder) == []
    with pytest.raises(SystemExit, match="No single lesson"):
        workspace.refresh("7")


def test_lessons_gone_upstream_are_removed_only_when_untouched(course):
    notebooks, folder = course
    ws.Workspace(folder, notebooks).sync()
    edit(folder / "01-add.ipynb")
    (notebooks / "00-add.ipynb").unlink()
    (notebooks / "01-add.ipynb").unlink()
    report = ws.Workspace(folder, notebooks).sync()
    assert report.removed == ["00-add.ipynb"] and report.orphaned == ["01-add.ipynb"]
    assert not (folder / "00-add.ipynb").exists() and (folder / "01-add.ipynb").exists()


def test_jupyter_is_rooted_at_the_project_with_the_course_style_sheet():
    command, env = ws.jupyter_command("lab", ws.DEFAULT_WORKSPACE, ["--no-browser"])
    assert f"--ServerApp.root_dir={ws.ROOT}" in command and "--LabApp.default_url=/lab/tree/workspace" in command
    assert "--LabApp.custom_css=True" in command and command[-1] == "--no-browser"
    assert env["JUPYTER_CONFIG_DIR"] == str(ws.CONFIG_DIR)
    css = (ws.CONFIG_DIR / "custom" / "custom.css").read_text()
    assert "../files/companion/fonts/CourseSansSC-Regular.otf" in css
    assert (ws.ROOT / "companion" / "fonts" / "CourseSansSC-Regular.otf").exists()
    command, _ = ws.jupyter_command("notebook", ws.NOTEBOOK_DIR, [])
    assert "--JupyterNotebookApp.default_url=/tree/notebooks" in command
    assert not any("app_settings_dir" in part for part in command), "English menus unless the course is in Chinese"


def test_a_chinese_workspace_opens_jupyter_with_chinese_menus():
    from jupyterlab_server.translation_utils import get_language_pack

    for app, server in (("lab", "LabApp"), ("notebook", "JupyterNotebookApp")):
        command, _ = ws.jupyter_command(app, ws.DEFAULT_WORKSPACE, [], "zh")
        assert f"--{server}.app_settings_dir={ws.CONFIG_DIR / 'lab-zh'}" in command
    overrides = json.loads((ws.CONFIG_DIR / "lab-zh" / "overrides.json").read_text(encoding="utf-8"))
    assert overrides == {"@jupyterlab/translation-extension:plugin": {"locale": "zh_CN"}}
    strings, _ = get_language_pack("zh_CN")  # the installed language pack that locale asks for
    assert strings["jupyterlab"]["Edit"] == ["编辑"] and strings["notebook"]["Advanced Tools"] == ["高级工具"]
