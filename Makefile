# The two set-up commands of README.md. Each makes its own virtual environment (.venv) from a fresh clone,
# needing only Python 3.11+ and pip. Re-running is cheap: pip only runs again when pyproject.toml changes.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
DATA   ?= .hoglab-data
OUT    ?= hoglab-report
# The notebooks start their own demo service unless these point them at one: unset for deterministic outputs.
NO_SERVICE_ENV := env -u HOGLAB_HOST -u HOGLAB_API_KEY -u HOGLAB_PROJECT_ID

.PHONY: demo test notebooks bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-app: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[server,clickhouse,notebook]'
	touch $@

# PostHog's published OpenAPI document, the tests' oracle of request and answer shapes, comes in the PyPI package
# arcade-posthog-api; only its JSON file is read, so the package goes in without its (unrelated) dependencies.
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m pip install --quiet --no-deps arcade-posthog-api==0.2.1
	touch $@ $(VENV)/.installed-app

## The main job: the service on the embedded engine with the demo project, its experiment analysed (verdict
## printed, report and figures in $(OUT)/), then serving for notebooks until Ctrl-C.
demo: $(VENV)/.installed-app
	$(BIN)/hoglab demo --data-dir $(DATA) --port $(PORT) --out $(OUT)

## The whole test suite: lint, types, layer contracts, unit and integration tests, notebooks.
test: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench notebooks
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache  # the layer contracts of pyproject.toml [tool.importlinter]
	$(BIN)/pytest -n 2 --dist loadgroup tests
	$(NO_SERVICE_ENV) $(BIN)/pytest -p no:xdist --nbval-lax --nbval-current-env \
	  --nbval-sanitize-with notebooks/sanitize.cfg notebooks

## Re-run the tour notebooks in place (after changing them): their stored outputs are what nbval checks.
notebooks: $(VENV)/.installed-dev
	cd notebooks && for nb in *.ipynb; do $(NO_SERVICE_ENV) ../$(BIN)/jupyter-execute --inplace $$nb || exit 1; done

bench: $(VENV)/.installed-dev
	for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) $(DATA) $(OUT) .pytest_cache .mypy_cache .ruff_cache
