"""The course's tooling (handout, workspace, progress, walkthrough, ...), one package: `python -m tools.NAME` from the
project root, or `python3 tools/course.py TARGET`, the entry point `make` calls. `tools.course` holds the course model
every tool and test shares."""
