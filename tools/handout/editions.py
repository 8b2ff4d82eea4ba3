"""The six editions (English, Chinese, bilingual; student and teacher) and the notebook each one makes of a lesson.

An edition's notebook is still a notebook: its language's cells, solutions stubbed for students and marked for
teachers, figures numbered, every cell tagged with its lesson. Exporting and printing it is the other modules' job.
"""

import copy
import hashlib
import re
from dataclasses import dataclass

import nbformat
from nbconvert.preprocessors import CoalesceStreamsPreprocessor

from tools import zh_sync
from tools.course import course_map
from tools.lesson_copies import exercises, one_language, stub_solutions

LANGUAGES = ("en", "zh", "bilingual")
VERSIONS = ("student", "teacher")
COPY_LANGUAGE = {"en": "en", "zh": "zh", "bilingual": "both"}  # tools.lesson_copies' name for each language
# Page chrome in the edition's own language, so the English edition holds no Chinese and vice versa.
TITLES = {
    ("en", "student"): "Student edition",
    ("en", "teacher"): "Teacher edition — answers inside",
    ("zh", "student"): "学生版",
    ("zh", "teacher"): "教师版（含答案）",
    ("bilingual", "student"): "Student edition · 学生版",
    ("bilingual", "teacher"): "Teacher edition — answers inside · 教师版（含答案）",
}
# The edition in the running header: the bilingual label without "— answers inside", so that with the lesson's
# title it fits one line.
HEADER_LABELS = {
    ("bilingual", "student"): "Student edition · 学生版",
    ("bilingual", "teacher"): "Teacher edition · 教师版",
}
COURSE = {"en": "Tensor by Tensor", "zh": "张量拾级", "bilingual": "Tensor by Tensor · 张量拾级"}
WORDS = {  # the few fixed words the handout adds, per edition language
    "en": {
        "figure": "Figure",
        "contents": "Contents",
        "glossary": "Glossary",
        "key": "Answer key",
        "answer": "Your answer",
        "check": "Self-check: run it in the notebook; it prints ✓ Correct or a hint",
        "solution": "Solution",
        "stale": "The Chinese text below was written for an earlier version of the English; it is being revised.",
        "why": "Why it works",
        "mistakes": "Typical wrong answers and the hint the self-check gives",
        "discuss": "For discussion",
        "lesson": "Lesson",
        "prev": "previous",
        "next": "next",
        "made": "PyTorch {torch} · built {date}",
    },
    "zh": {
        "figure": "图",
        "contents": "目录",
        "glossary": "术语表",
        "key": "答案与讲解",
        "answer": "你的答案",
        "check": "自检：请在笔记本里运行，答对打印 ✓ 正确，答错给出提示",
        "solution": "参考答案",
        "stale": "下面的中文对应的是英文的旧版本，正在修订。",
        "why": "为什么这样做",
        "mistakes": "常见错误及自检给出的提示",
        "discuss": "课堂讨论",
        "lesson": "第 {n} 课",
        "prev": "上一课",
        "next": "下一课",
        "made": "PyTorch {torch} · 生成于 {date}",
    },
}
# Prose a book sets in a box: a pitfall, a lesson's summary, and what the learner will read elsewhere (the errata:
# a claim of the notes, of blog posts and old code, and what is true now).
CALLOUTS = {
    "pitfall": re.compile(r"\*\*(Pitfall|陷阱)|## (Pitfalls|常见陷阱)"),
    "summary": re.compile(r"## (Summary|小结)\s*$", re.M),
    "elsewhere": re.compile(r"## (Errata|勘误|What you will read elsewhere|你在别处会读到)"),
}
LONG_INPUT = 25  # lines of code: over a third of an A4 page, which waiting for the next page could waste


@dataclass(frozen=True)
class Edition:
    """One of the six handouts: a language and a version."""

    language: str
    version: str

    @property
    def name(self) -> str:
        """Folder name, e.g. 'zh-student'."""
        return f"{self.language}-{self.version}"

    @property
    def title(self) -> str:
        """The edition's label in its own language(s), e.g. '学生版'."""
        return TITLES[(self.language, self.version)]

    @property
    def languages(self) -> list[str]:
        """The languages of its prose, in order: ['en', 'zh'] for the bilingual edition."""
        return ["en", "zh"] if self.language == "bilingual" else [self.language]

    @property
    def header_label(self) -> str:
        """The edition's label in the running header (the bilingual one shorter)."""
        return HEADER_LABELS.get((self.language, self.version), self.title)


EDITIONS = [Edition(language, version) for language in LANGUAGES for version in VERSIONS]


def word(edition: Edition, key: str, **values: object) -> str:
    """A fixed handout word in the edition's language(s)."""
    if edition.language == "bilingual":
        return f"{WORDS['en'][key].format(**values)} · {WORDS['zh'][key].format(**values)}"
    return WORDS[edition.language][key].format(**values)


def edition_notebook(notebook: nbformat.NotebookNode, edition: Edition, number: str = "") -> nbformat.NotebookNode:
    """A copy of `notebook` for one edition: its language only, solutions stubbed for students and marked for
    teachers, figures numbered, long inputs marked, stale Chinese marked, consecutive prints to one stream merged,
    every cell tagged with its lesson."""
    if edition.language not in LANGUAGES or edition.version not in VERSIONS:
        raise ValueError(f"edition must use a language from {list(LANGUAGES)} and a version from {list(VERSIONS)}")
    marked = copy.deepcopy(notebook)
    for cell in marked.cells:  # a print split into flushes is one block on paper, as in JupyterLab
        CoalesceStreamsPreprocessor().preprocess_cell(cell, {}, 0)
    for i, cell in enumerate(marked.cells[:-1]):  # a Chinese cell written for older English is shown as such
        twin = marked.cells[i + 1]
        if "lang-en" in cell.metadata.get("tags", []) and twin.metadata.get("en_sha") not in (
            None,
            zh_sync.english_hash(cell.source),
        ):
            twin.metadata["tags"] = [*twin.metadata.get("tags", []), "zh-stale"]
    for solution, check in exercises(marked):
        marked.cells[solution].metadata["tags"] = [*marked.cells[solution].metadata["tags"], "teacher-solution"]
        marked.cells[check].metadata.setdefault("tags", []).append("self-check")
    result = one_language(marked, COPY_LANGUAGE[edition.language])
    if edition.version == "student":
        result = stub_solutions(result)
        for cell in result.cells:
            tags = cell.metadata.get("tags", [])
            if "teacher-solution" in tags:
                cell.metadata["tags"] = [t for t in tags if t != "teacher-solution"] + ["answer-area"]
    figure = 0
    for cell in result.cells:
        for output in cell.get("outputs", []):  # a figure prints as its vector copy (companion/course.py)
            if svg := output.get("metadata", {}).get("image/png", {}).get("vector_copy"):
                output.data = {"image/svg+xml": svg}
                output.metadata = {}
        tags = cell.metadata.setdefault("tags", [])
        if number:
            tags.append(f"lesson-{number}")
        if cell.cell_type == "code" and cell.source.count("\n") >= LONG_INPUT:
            tags.append("long-input")  # printed across a page break rather than moved whole to the next page
        if cell.cell_type != "markdown":
            continue
        tags += [f"callout-{kind}" for kind, start in CALLOUTS.items() if start.match(cell.source)]
        if edition.language == "zh" and "lang-zh" in tags:  # the lesson's title, bold in the source, is its heading
            cell.source = re.sub(r"\A\*\*(第 \d\d 课 · .+)\*\*$", r"# \1", cell.source, flags=re.M)
        # `output:NAME` fences exist for the tests; readers see plain text blocks
        cell.source = re.sub(r"^```output:[\w-]+$", "```text", cell.source, flags=re.M)
        if "caption" in tags:
            language = "zh" if "lang-zh" in tags else "en"
            figure += "lang-en" in tags or edition.language == "zh"
            label = f"{WORDS[language]['figure']} {int(number or 0)}.{figure}"
            text = re.sub(r"^(?:\*\*)?(?:Figure|图)\s*[:：]\s*(?:\*\*)?\s*", "", cell.source.strip())
            cell.source = f"**{label}**{'：' if language == 'zh' else ': '}{text}"
    return result


def lesson_title(notebook: nbformat.NotebookNode, language: str) -> str:
    """The lesson's title in one language ('bilingual' gives 'English / 中文'), as notebooks/course.toml gives it,
    for the lesson whose number the notebook's first lines carry (the source, or a one-language copy)."""
    firsts = "\n".join(c.source.splitlines()[0] if c.source else "" for c in notebook.cells[:3])
    number = re.search(r"^(?:# |\*\*第 |# 第 )(\d\d)", firsts, re.M).group(1)
    lesson = next(entry for entry in course_map() if entry["number"] == number)
    english, chinese = f"{number} · {lesson['title']}", f"{number} · {lesson['title_zh']}"
    return {"en": english, "zh": chinese, "bilingual": f"{english} / {chinese}"}[language]


def plain(title: str) -> str:
    """A title without backticks, for headers, bookmarks and page titles."""
    return title.replace("`", "")


def running_head(title: str) -> str:
    """A lesson's running header: its title, or in the bilingual edition ('NN · English / NN · 中文') each title up
    to its colon, once numbered ('01 · Tensors / 张量'), so that with the edition label it fits one line."""
    if " / " not in title:
        return plain(title)
    english, chinese = (plain(part) for part in title.split(" / ", 1))
    english, chinese = english.split(": ")[0], chinese.split("：")[0].split(" · ", 1)[1]
    return english if english.endswith(f" · {chinese}") else f"{english} / {chinese}"


def lesson_pdf(stem: str, edition: Edition) -> str:
    """A lesson's PDF file name, which names its edition: '01-tensors.zh-student.pdf'."""
    return f"{stem}.{edition.name}.pdf"


def markdown_cell(source: str, *tags: str) -> nbformat.NotebookNode:
    """A markdown cell the handout adds (cover, glossary, answer key), with its tags. Its id, which the page shows,
    comes from its text rather than nbformat's random one, so that the same course builds the same HTML."""
    cell_id = hashlib.sha256(f"{source}\0{','.join(tags)}".encode()).hexdigest()[:8]  # tags: the worksheets'
    # headings repeat from lesson to lesson, each under its lesson's tag
    return nbformat.v4.new_markdown_cell(source, id=cell_id, metadata={"tags": list(tags)})
