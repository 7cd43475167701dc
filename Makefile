# The two commands: `make run` and `make test`. Both install what is missing first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.requirements-installed
# Material for MkDocs prints its end-of-life notice (May 2027) on every build; said once here instead.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs

.PHONY: run test install chromium docs

install: $(STAMP) chromium

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

chromium: $(STAMP)
	@scripts/ensure-chromium.sh $(BIN)/python

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	$(BIN)/python manage.py clear_metrics  # RYSH_METRICS: no process of ours runs yet (docs/metrics.md)
	@echo "rysh dashboard: http://$${RYSH_HOST:-127.0.0.1}:$${RYSH_PORT:-8000}/"
	$(BIN)/honcho --no-colour -f Procfile start

test: install
	$(MKDOCS) build --strict --quiet
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest
	$(BIN)/python scripts/scaleout_tests.py

# The manual (mkdocs.yml, docs/), served with live reload while you edit it.
docs: $(STAMP)
	$(MKDOCS) serve --dev-addr 127.0.0.1:8001
