# The two set-up commands of README.md. Each makes its own virtual environment (.venv) from a fresh clone,
# needing only Python 3.11+ and pip. Re-running is cheap: pip only runs again when pyproject.toml changes.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
DATA   ?= .hoglab-data
OUT    ?= out

.PHONY: demo test lint unit notebooks bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-app: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[server,clickhouse,notebook]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed-app

## The main job: the service on the embedded engine with the demo project, its experiment analysed.
demo: $(VENV)/.installed-app
	$(BIN)/hoglab demo --data-dir $(DATA) --port $(PORT) --out $(OUT)

## The whole test suite: lint, types, unit and integration tests, notebooks.
test: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests $(wildcard bench)
	$(BIN)/mypy
	$(BIN)/pytest -n 2 --dist loadgroup tests
	if ls notebooks/*.ipynb >/dev/null 2>&1; then \
	  $(BIN)/pytest -p no:xdist --nbval-lax --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg notebooks; fi

bench: $(VENV)/.installed-dev
	for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) $(DATA) $(OUT) .pytest_cache .mypy_cache .ruff_cache
