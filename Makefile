# Tensor by Tensor: every target is one call of tools/course.py, which holds the logic (the environment in .venv/,
# built on first use; the course's settings; each target's commands), so that `python3 tools/course.py TARGET`
# (Windows: `py tools\course.py TARGET`) does the same without make. A fresh clone needs only Python 3.11+.
PYTHON ?= python3

# The settings tools/course.py reads (`make help` lists them). Those given on make's command line are passed on as
# NAME=value; those in the environment reach it as they are.
SETTINGS := COURSE_LANG REFRESH WORKSPACE LAB_ARGS PROGRESS_ARGS WALKTHROUGH_ARGS MUTANTS_ARGS NB PYTEST_WORKERS \
	TORCH_SPEC TORCH_INDEX MATRIX_TORCH_SPEC WHEELS
PASS := $(foreach v,$(SETTINGS),$(if $(filter command line override,$(origin $(v))),'$(v)=$(subst ','\'',$($(v)))'))

TARGETS := help venv wheels lab notebook lab-teacher progress test test-integration rerun test-gpu execute lint walkthrough handout \
	bench matrix determinism soak mutants hub hub-stop class-progress test-hub browser clean
.PHONY: $(TARGETS)

$(TARGETS):
	@$(PYTHON) tools/course.py --from-make $@ $(PASS)
