# GAMA-Bench. `make reproduce` runs every notebook offline; `make test` runs the tests.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
KERNEL ?= gama-bench
PROFILE ?= offline
RUN    ?=

.PHONY: reproduce test venv kernel clean-venv strip

reproduce: $(VENV)/.installed
	$(BIN)/python -m gama_utils.runs reproduce --profile $(PROFILE) $(if $(RUN),--run $(RUN)) --kernel $(KERNEL) $(ARGS)

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (gama-bench)"
	touch $@

kernel: $(VENV)/.installed
	$(BIN)/python -m ipykernel install --user --name $(KERNEL) --display-name "Python (gama-bench)"

strip:
	$(BIN)/python -m gama_utils.runs strip notebooks/*.ipynb

clean-venv:
	rm -rf $(VENV)
