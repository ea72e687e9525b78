# The set-up commands of README.md. Each makes its own virtual environment (.venv) from a fresh clone, needing only
# Python 3.11+ and pip, and says what it is doing while it does (a fresh clone's first install takes a while).
# Re-running is cheap: pip only runs again when pyproject.toml changes.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
DATA   ?= .hoglab-data
OUT    ?= hoglab-report
LAB_ARGS ?=
# pip's own lines (what it collects, what it installs) are the progress; the bar is left to terminals.
PIP    := $(BIN)/python -m pip install --disable-pip-version-check
# The notebooks start their own demo service unless these point them at one: unset for deterministic outputs.
NO_SERVICE_ENV := env -u HOGLAB_HOST -u HOGLAB_API_KEY -u HOGLAB_PROJECT_ID

.PHONY: demo lab test notebooks bench clean

$(BIN)/python:
	@echo "make: creating the virtual environment $(VENV) with $(PYTHON) (once, a few seconds)..."
	$(PYTHON) -m venv $(VENV)
	@echo "make: upgrading pip in $(VENV)..."
	$(PIP) --quiet --upgrade pip

$(VENV)/.installed-app: pyproject.toml | $(BIN)/python
	@echo "make: installing hoglab with the service and notebook extras into $(VENV) (about 30 s the first time)..."
	$(PIP) -e '.[server,clickhouse,notebook]'
	touch $@
	@echo "make: $(VENV) is ready"

$(VENV)/.installed-lab: pyproject.toml | $(BIN)/python
	@echo "make: installing hoglab, the notebook extras and JupyterLab into $(VENV) (about 60 s the first time)..."
	$(PIP) -e '.[server,clickhouse,notebook,lab]'
	touch $@ $(VENV)/.installed-app
	@echo "make: $(VENV) is ready"

# PostHog's published OpenAPI document, the tests' oracle of request and answer shapes, comes in the PyPI package
# arcade-posthog-api; only its JSON file is read, so the package goes in without its (unrelated) dependencies.
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	@echo "make: installing hoglab with every extra and the test tools into $(VENV) (1-2 min the first time)..."
	$(PIP) -e '.[dev]'
	@echo "make: installing PostHog's OpenAPI document (arcade-posthog-api, the tests' oracle)..."
	$(PIP) --no-deps arcade-posthog-api==0.2.1
	touch $@ $(VENV)/.installed-app $(VENV)/.installed-lab
	@echo "make: $(VENV) is ready"

## The main job: the service on the embedded engine with the demo project, its experiment analysed (verdict
## printed, report and figures in $(OUT)/), then serving for notebooks until Ctrl-C.
demo: $(VENV)/.installed-app
	$(BIN)/hoglab demo --data-dir $(DATA) --port $(PORT) --out $(OUT)

## JupyterLab on the tour notebooks, every kernel pointed at the demo service: the one `make demo` serves on
## $(PORT) is reused, else one is started here. Until Ctrl-C. LAB_ARGS go to jupyter lab (e.g. --no-browser).
lab: $(VENV)/.installed-lab
	$(BIN)/hoglab lab --data-dir $(DATA) --port $(PORT) -- $(LAB_ARGS)

## The whole test suite: lint, types, layer contracts, unit and integration tests, and the tour notebooks under
## nbval, twice, with the clock moved days ahead and TZ set off UTC (their checked outputs hold on any day).
test: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench notebooks
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache  # the layer contracts of pyproject.toml [tool.importlinter]
	$(BIN)/pytest -n 2 --dist loadgroup tests  # the notebooks too: tests/test_notebooks_any_day.py

## Re-run the tour notebooks in place (after changing them): their stored outputs are what nbval checks.
notebooks: $(VENV)/.installed-dev
	cd notebooks && for nb in *.ipynb; do $(NO_SERVICE_ENV) ../$(BIN)/jupyter-execute --inplace $$nb || exit 1; done

bench: $(VENV)/.installed-dev
	for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) $(DATA) $(OUT) .pytest_cache .mypy_cache .ruff_cache
