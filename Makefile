# Deskpilot: `make run` starts the appliance, `make test` proves it. `make help` lists the rest.
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
HELM  := $(VENV)/bin/helm
STAMP := $(VENV)/.stamp
IMAGE ?= deskpilot

.DEFAULT_GOAL := help
.PHONY: check help system system-test venv run demo test e2e bench bench-peers helm-lint lint format image image-test

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

system: ## install the Debian packages, the desktop user and noVNC (idempotent)
	@scripts/install-system.sh

system-test:
	@scripts/install-system.sh --test

$(STAMP): pyproject.toml constraints.txt scripts/install-python.sh
	scripts/install-python.sh $(VENV) server,test
	@touch $@

venv: $(STAMP) ## create/refresh the Python venv

$(HELM): scripts/install-helm.sh
	scripts/install-helm.sh $(VENV)/bin

run: system $(STAMP) ## start the whole appliance in the foreground (Ctrl-C stops it); settings: docs/operations.md
	DESKPILOT_VENV=$(abspath $(VENV)) scripts/appliance.sh

demo: $(STAMP) ## one task end to end on the desktop of a running `make run`, by a scripted model (no key)
	$(PY) scripts/demo.py

test: system-test $(STAMP) $(HELM) ## install what is missing and run the whole test suite (the image too: it starts an engine), with its coverage
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	scripts/pytest-coverage.sh $(VENV)

e2e: system-test $(STAMP) ## only the end-to-end tests (boot the whole appliance, real browser)
	$(VENV)/bin/pytest -m e2e

bench: system-test $(STAMP) bench/mcp-ts/node_modules ## run every benchmark under bench/ and print its figures
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

bench-peers: system-test $(STAMP) ## build cua's server and Bytebot's daemon outside the repo, then bench/peers.py
	-bench/peers/setup-cua.sh
	-bench/peers/setup-bytebot.sh
	$(PY) bench/peers.py

bench/mcp-ts/node_modules: bench/mcp-ts/package-lock.json
	npm ci --prefix bench/mcp-ts --no-audit --no-fund
	@touch $@

helm-lint: system-test $(STAMP) $(HELM) ## lint the Helm chart and validate what it renders (tests/integration/test_helm*.py)
	$(VENV)/bin/pytest -q tests/integration/test_helm.py tests/integration/test_helm_fleet.py tests/integration/test_helm_metrics.py

check: $(STAMP) ## the fast lane, about a minute: lint, types and the unit tests (layout, facts, docs included)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q tests/unit

lint: $(STAMP) ## ruff, ruff format check, mypy --strict, shellcheck
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	shellcheck scripts/*.sh bench/peers/*.sh .ci/run

format: $(STAMP) ## apply ruff's fixes and formatting
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

image: ## build the container image; installs and starts a Docker engine first when none answers (README)
	scripts/build-image.sh $(IMAGE)

image-test: system-test $(STAMP) ## build the image from this checkout, boot it and check it (tests/image)
	$(VENV)/bin/pytest -m image tests/image
