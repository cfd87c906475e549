# configctl: every target creates .venv on first use and installs the project into it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LOCK   := constraints.txt
KAFKA  := build/kafka
KAFKA_STAMP := $(KAFKA)/VERSION
KAFKA4 := build/kafka4
KAFKA4_STAMP := $(KAFKA4)/VERSION
SPARK_KAFKA := build/spark-kafka
SPARK_KAFKA_STAMP := $(SPARK_KAFKA)/VERSION

.PHONY: all install kafka spark-kafka kafka-clean lock demo test test-long unit lint bench schemas clean
.PHONY: browser test-browser screenshots

all: test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c $(LOCK) --upgrade pip

# Installs exactly the versions in constraints.txt (the versions the suite was last run with).
$(STAMP): $(BIN)/python pyproject.toml $(LOCK)
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Refresh constraints.txt: the newest versions pyproject.toml allows, resolved in a scratch venv.
# Run `make test` after it and commit both if they pass.
lock:
	rm -rf build/lock-venv
	$(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/python -m pip install --quiet --upgrade pip
	build/lock-venv/bin/python -m pip install --quiet '.[dev]'
	{ echo "# Locked dependencies for Python $$(build/lock-venv/bin/python -c 'import sys; print(*sys.version_info[:2], sep=".")'): written by \`make lock\`, installed by \`make\`."; \
	  build/lock-venv/bin/python -m pip freeze --all --exclude configctl; } > $(LOCK)
	rm -rf build/lock-venv

# Apache Kafka and its dependencies from Maven Central: 3.9 (ZooKeeper mode) pinned in kafka/pom.xml
# into build/kafka, 4.x (KRaft) pinned in kafka/kafka4/pom.xml into build/kafka4, and Spark's Kafka
# source (the audit's reader of a KRaft cluster) pinned in kafka/spark-kafka/pom.xml. Each stamp
# (VERSION, the pinned version) makes a second run a no-op; Maven's own cache (~/.m2) serves a rebuild.
$(KAFKA_STAMP): kafka/pom.xml
$(KAFKA4_STAMP): kafka/kafka4/pom.xml
$(SPARK_KAFKA_STAMP): kafka/spark-kafka/pom.xml
$(KAFKA_STAMP) $(KAFKA4_STAMP) $(SPARK_KAFKA_STAMP):
	rm -rf $(@D)/libs
	mvn -B -q -f $< dependency:copy-dependencies -DincludeScope=runtime \
	    -DoutputDirectory=$(CURDIR)/$(@D)/libs
	sed -n 's|.*<kafka.version>\(.*\)</kafka.version>.*|\1|p' $< > $@

kafka: $(KAFKA_STAMP) $(KAFKA4_STAMP) $(SPARK_KAFKA_STAMP)

spark-kafka: $(SPARK_KAFKA_STAMP)

kafka-clean:
	rm -rf $(KAFKA) $(KAFKA4) $(SPARK_KAFKA)

demo: $(STAMP) $(KAFKA_STAMP) $(KAFKA4_STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/tour.sh
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/tour_kraft.sh

# Debian's chromium for the real-browser tests (Playwright drives it; it downloads no browser of its
# own). Installed only when missing: a no-op on a machine that has it. Needs root (apt-get).
CHROMIUM ?= /usr/bin/chromium

# Everything, the console in a real browser included (tests/browser: chromium is installed first).
test: $(STAMP) $(KAFKA_STAMP) $(KAFKA4_STAMP) $(SPARK_KAFKA_STAMP) browser
	CONSOLE_BROWSER_TESTS=1 CONSOLE_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest $(PYTEST_ARGS)

browser:
	@test -x $(CHROMIUM) || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	@$(CHROMIUM) --version

# Only the console in a real browser (tests/browser), against real ZooKeeper and listener processes.
test-browser: $(STAMP) browser
	CONSOLE_BROWSER_TESTS=1 CONSOLE_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest tests/browser $(PYTEST_ARGS)

# Screenshots of every console page (fleet, entity, rollouts, drift at 500 brokers) and of the
# audit's HTML report at 500 brokers, into build/screenshots/.
screenshots: $(STAMP) browser
	CONSOLE_BROWSER_TESTS=1 CONSOLE_CHROMIUM=$(CHROMIUM) CONSOLE_SCREENSHOTS=build/screenshots \
	    $(BIN)/python -m pytest tests/browser/test_screenshots.py $(PYTEST_ARGS)

# The long property runs (1,000 random sequences against a real broker, ...), skipped by make test.
test-long: $(STAMP) $(KAFKA_STAMP) $(KAFKA4_STAMP)
	$(BIN)/python -m pytest -m long $(PYTEST_ARGS)

unit: $(STAMP)
	$(BIN)/python -m pytest -m unit $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check configctl tests benchmarks scripts examples
	$(BIN)/ruff format --check configctl tests benchmarks scripts examples
	$(BIN)/mypy

bench: $(STAMP) $(KAFKA_STAMP) $(KAFKA4_STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash benchmarks/run_all.sh

# The soak: SOAK_BROKERS listeners on a real 3-node ensemble under writes and random faults for
# SOAK_SECONDS, checked throughout; writes build/soak.json, exits non-zero on any violation. Not part of make test.
SOAK_SECONDS ?= 600
SOAK_BROKERS ?= 100
.PHONY: soak
soak: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python benchmarks/soak.py --seconds $(SOAK_SECONDS) --brokers $(SOAK_BROKERS)

# Regenerate schemas/ from the Kafka catalogue in ../shared (a maintainer step; the result is committed).
schemas: $(STAMP)
	$(BIN)/python scripts/generate_schemas.py ../shared/reference/kafka-config-catalogue.json schemas

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache

# Rewrite the generated command and option lists of docs/cli.md from the click commands.
.PHONY: cli-docs
cli-docs: $(STAMP)
	$(BIN)/python scripts/cli_reference.py
