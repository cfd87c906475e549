# configctl: every target creates .venv on first use and installs the project into it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: all install demo test unit lint bench schemas clean

all: test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/tour.sh

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

unit: $(STAMP)
	$(BIN)/python -m pytest -m unit $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check configctl tests benchmarks scripts examples
	$(BIN)/ruff format --check configctl tests benchmarks scripts examples

bench: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash benchmarks/run_all.sh

# Regenerate schemas/ from the Kafka catalogue in ../shared (a maintainer step; the result is committed).
schemas: $(STAMP)
	$(BIN)/python scripts/generate_schemas.py ../shared/reference/kafka-config-catalogue.json schemas

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache
