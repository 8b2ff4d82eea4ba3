# Tensor by Tensor: every target bootstraps .venv on first use, so a fresh clone needs only Python 3.11+ and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH_VERSION := 2.13.0

# On Linux, PyPI's torch is a multi-GB CUDA build; the CPU wheel from PyTorch's own index is what a laptop needs.
# For a CUDA machine: make test TORCH_SPEC=torch==$(TORCH_VERSION) TORCH_INDEX=
ifeq ($(shell uname -s),Linux)
TORCH_SPEC ?= torch==$(TORCH_VERSION)+cpu
TORCH_INDEX ?= --extra-index-url https://download.pytorch.org/whl/cpu
else
TORCH_SPEC ?= torch==$(TORCH_VERSION)
TORCH_INDEX ?=
endif

# One thread and a fixed hash seed: the stored outputs must come out the same on every machine.
RUN := env OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} PYTHONHASHSEED=0
# Jupyter refuses to run as root unless told to (containers and CI often are root).
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]-*.ipynb))

.PHONY: help venv lab lab-teacher notebook progress walkthrough test rerun test-gpu execute lint handout browser bench matrix determinism soak clean

help:
	@echo "make lab      open your copy of the course (workspace/, exercises to solve) in JupyterLab"
	@echo "              COURSE_LANG=en|zh|both (remembered); REFRESH=NN replaces one lesson, backing yours up"
	@echo "make notebook the same in Notebook 7; make lab-teacher opens notebooks/ with the answers"
	@echo "make progress your exercises: passed / wrong (with a hint) / not attempted"
	@echo "make walkthrough every lesson in JupyterLab in headless Chromium, Run All twice, screenshots in build/"
	@echo "make test     run every test: companion unit tests, notebook conventions, nbval on every notebook"
	@echo "make rerun    every notebook (or NB=...) run twice in one kernel, both passes against the stored outputs"
	@echo "make test-gpu the same on a CUDA machine, lessons computing on the GPU"
	@echo "make execute  re-execute every notebook top to bottom (the only way stored outputs change)"
	@echo "make lint     ruff over companion/, tests/, tools/ and notebooks/"
	@echo "make bench    time and memory of every notebook against the course targets"
	@echo "make matrix   the whole suite with the newest torch allowed, in .venv-matrix"
	@echo "make determinism  nbval with 1 and 2 threads, and with the plain (unvectorised) CPU kernels"
	@echo "make soak     20 DDP launches in a row"
	@echo "make handout  HTML and PDF handouts (English, Chinese, bilingual; student and teacher) in handout/"

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is needed (the stored outputs come from 3.11); set PYTHON=python3.x")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch alone from its index (no deps, so only this one lookup goes there), then the rest from PyPI.
	$(BIN)/python -m pip install --quiet --no-deps $(TORCH_INDEX) "$(TORCH_SPEC)"
	# constraints.txt pins every other package; its torch line is left out, so the TORCH_SPEC asked for stays.
	grep -v '^torch==' constraints.txt > $(VENV)/constraints-without-torch.txt
	$(BIN)/python -m pip install --quiet -c $(VENV)/constraints-without-torch.txt -e ".[course]"
	$(BIN)/python -c "import torch; print('torch', torch.__version__, 'in $(VENV)')"
	touch $@

# The learner's copy in workspace/ (git-ignored; exercises stubbed), made on first run and never overwritten where the
# learner changed a lesson. COURSE_LANG=en|zh|both is remembered; REFRESH=NN replaces one lesson (old one backed up).
WORKSPACE ?= workspace
WORKSPACE_ARGS = --workspace $(WORKSPACE) $(if $(COURSE_LANG),--lang $(COURSE_LANG)) $(if $(REFRESH),--refresh $(REFRESH))
lab: $(STAMP)
	$(RUN) $(BIN)/python tools/workspace.py lab $(WORKSPACE_ARGS) -- $(LAB_ARGS)

# The source notebooks with the answers, for teachers and authors.
lab-teacher: $(STAMP)
	$(RUN) $(BIN)/python tools/workspace.py teacher -- $(LAB_ARGS)

# The same workspace in Notebook 7 (`jupyter notebook`).
notebook: $(STAMP)
	$(RUN) $(BIN)/python tools/workspace.py notebook $(WORKSPACE_ARGS) -- $(LAB_ARGS)

# Runs each workspace lesson's exercises in a fresh kernel (never writing the learner's files); PROGRESS_ARGS=--strict
# exits non-zero unless every exercise passed.
progress: $(STAMP)
	$(RUN) $(BIN)/python tools/progress.py --workspace $(WORKSPACE) $(PROGRESS_ARGS)

# Every lesson of the learner's workspace in JupyterLab in headless Chromium: Run All twice, outputs, plots, fonts.
walkthrough: $(VENV)/.handout-installed browser
	$(RUN) $(BIN)/python tools/walkthrough.py $(WALKTHROUGH_ARGS)

# Two workers, one file each (--dist loadfile): a notebook's cells must run in one kernel, in order; files in the
# order conftest.py gives them (longest first), not xdist's.
PYTEST_WORKERS ?= 2
SUITE = -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --nbval --nbval-current-env tests notebooks
test: $(STAMP)
	$(RUN) $(BIN)/python $(SUITE)

# Every notebook (or NB=...) run twice in one kernel, both passes compared with the stored outputs (conftest.py).
# Not part of `make test` (it doubles the notebooks' time); CI's walkthrough runs every lesson twice in the Lab.
rerun: $(STAMP)
	$(RUN) $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --nbval --nbval-current-env --rerun-notebooks $(if $(NB),$(NB),notebooks)

# On a CUDA machine, after `make clean`: make test-gpu TORCH_SPEC=torch==$(TORCH_VERSION) TORCH_INDEX=
# Lessons that call companion.devices.pick_device() then compute on the GPU; the checked outputs must not change.
test-gpu: $(STAMP)
	@$(BIN)/python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else \
		'No CUDA device visible to PyTorch. On a CUDA machine: make clean; make test-gpu TORCH_SPEC=torch==$(TORCH_VERSION) TORCH_INDEX=')"
	$(RUN) COURSE_DEVICE=cuda $(BIN)/python $(SUITE)

execute: $(STAMP)
	$(RUN) $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.kernel_name=python3 --ExecutePreprocessor.record_timing=False \
		--ExecutePreprocessor.timeout=300 $(if $(NB),$(NB),$(NOTEBOOKS))
	$(BIN)/python tools/tidy_errors.py $(if $(NB),$(NB),$(NOTEBOOKS))

lint: $(STAMP)
	$(BIN)/ruff check companion tests tools notebooks conftest.py
	$(BIN)/ruff format --check companion tests tools notebooks conftest.py

# The whole suite again in a second environment with the newest torch the course allows (pyproject.toml).
MATRIX_VENV := .venv-matrix
MATRIX_TORCH_VERSION := 2.14.1
ifeq ($(shell uname -s),Linux)
MATRIX_TORCH_SPEC ?= torch==$(MATRIX_TORCH_VERSION)+cpu
else
MATRIX_TORCH_SPEC ?= torch==$(MATRIX_TORCH_VERSION)
endif
matrix: $(STAMP)
	test -x $(MATRIX_VENV)/bin/python || $(PYTHON) -m venv $(MATRIX_VENV)
	$(MATRIX_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(MATRIX_VENV)/bin/python -m pip install --quiet --no-deps $(TORCH_INDEX) "$(MATRIX_TORCH_SPEC)"
	$(MATRIX_VENV)/bin/python -m pip install --quiet -c $(VENV)/constraints-without-torch.txt -e ".[course]"
	$(RUN) $(MATRIX_VENV)/bin/python -c "import torch; print('matrix: torch', torch.__version__)"
	$(RUN) $(MATRIX_VENV)/bin/python $(SUITE)

# Figures for the README: per-notebook wall time, floor, slowest cell, peak memory; serial nbval time.
bench: $(STAMP)
	$(RUN) $(BIN)/python tools/bench.py

# Outputs identical across two executions and across thread counts (make test already ran with one thread).
# ATEN_CPU_CAPABILITY=default swaps PyTorch's vectorised CPU kernels for plain ones: the last bits of seeded weights and
# sums change as they do on a CPU with another instruction set (AVX2, AVX-512, ARM), so fragile outputs show here.
determinism: $(STAMP)
	for threads in 1 2; do OMP_NUM_THREADS=$$threads PYTHONHASHSEED=0 $(BIN)/python -m pytest -q --nbval --nbval-current-env notebooks || exit 1; done
	ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 PYTHONHASHSEED=0 $(BIN)/python -m pytest -q --nbval --nbval-current-env notebooks

# 20 launches in a row of lesson 12's DDP script (2 ranks each, gloo on CPU): the count and the seconds per launch.
soak: $(STAMP)
	$(RUN) $(BIN)/python tools/soak.py --launches 20

# PDFs need Chromium; the handout checks need poppler's pdfinfo, pdftotext and pdftoppm. Installed where we can.
browser:
	@if command -v chromium >/dev/null && command -v pdftotext >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing Chromium and poppler-utils with apt-get ..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium poppler-utils fonts-dejavu-core >/dev/null; \
	else \
		echo "No Chromium/poppler found: the handout will be HTML only. For PDFs install them, e.g."; \
		echo "  sudo apt-get install chromium poppler-utils   (Debian/Ubuntu)"; \
		echo "  brew install --cask chromium && brew install poppler   (macOS)"; \
	fi

$(VENV)/.handout-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -c $(VENV)/constraints-without-torch.txt -e ".[course,handout]"
	touch $@

handout: $(VENV)/.handout-installed browser
	$(RUN) $(BIN)/python tools/handout.py --out handout
	$(RUN) $(BIN)/python -m pytest -m handout tests/test_handout.py

clean:
	rm -rf $(VENV) $(MATRIX_VENV) build *.egg-info handout
