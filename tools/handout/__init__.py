"""Classroom handouts from the executed notebooks: three languages x student/teacher, as HTML, PDF and notebooks.

Run `python -m tools.handout` (or `make handout`). Everything is built offline: MathJax comes from the
`jupyter-server-mathjax` package (SVG output, whose glyphs are drawn from its bundled STIX-Web data, so hats and
roots never depend on a web font), the CJK font from `companion/fonts`, and PDFs are printed by a local Chromium,
whose CSS paged media gives the page furniture: a running header per lesson (named pages), "n / N" footers, a
cover, a table of contents and PDF bookmarks.

One module per job, each using those before it:
    editions   the six editions and the notebook each makes of a lesson
    key        the teacher's answer key, from the exercises' tables
    export     HTML pages (nbconvert's HTMLExporter and the templates in tools/templates/handout/)
    printing   PDFs by a local Chromium, and what is read back from them
    bundle     the student notebooks with `companion`, and the search that proves no answer ships in them
    book       the whole handout: every edition's pages, PDFs and book with its contents
"""
