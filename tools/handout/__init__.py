"""Classroom handouts from the executed notebooks: three languages x student/teacher, as HTML, PDF and notebooks.

Run `python -m tools.handout` (or `make handout`). Everything is built offline: MathJax comes from the
`jupyter-server-mathjax` package (its HTML-CSS output with the STIX-Web fonts it bundles: it ships no "TeX" font),
the fonts from matplotlib's data and `companion/fonts` (made TrueType by `fonts`), and PDFs are printed by a local
Chromium, whose CSS paged media gives the page furniture: a running header per lesson (named pages), "n / N"
footers, numbered sections and equations, a cover, a table of contents and PDF bookmarks.

One module per job, each using those before it:
    editions   the six editions and the notebook each makes of a lesson
    key        the teacher's answer key, from the exercises' tables
    export     HTML pages (nbconvert's HTMLExporter and the templates in tools/templates/handout/)
    fonts      the handout's fonts, embedded in every PDF as TrueType
    printing   PDFs by a local Chromium, and what is read back from them
    xref       a book's links to lessons and sections, inside the book and with their pages
    bundle     the student notebooks with `companion`, and the search that proves no answer ships in them
    book       the whole handout: every edition's pages, PDFs and book with its contents
"""
