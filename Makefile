# iolab — `make help` lists the targets.
.DEFAULT_GOAL := help
PY := .venv/bin/python

## setup: install what is missing (fio, linux-perf, .venv, Jupyter kernel)
setup:
	@bash scripts/setup.sh

## demo: run the flagship notebooks headless on the scratch file; executed notebooks + HTML in papermill_runs/
demo: setup
	$(PY) -m iolab.cli demo

## lab: JupyterLab on notebooks/ with the project's kernel (http://127.0.0.1:8888; LAB_ARGS for more)
lab: setup
	.venv/bin/jupyter lab --notebook-dir=notebooks --no-browser --ip=127.0.0.1 $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

## test: the whole test suite (real fio runs, short)
test: setup tio
	$(PY) -m pytest -q -ra tests

## tio: build fio's t/io_uring from the source of the installed fio version
tio: setup
	@bash scripts/build_tio.sh

## bench: the benchmarks (overhead of iolab run vs plain fio, parser throughput)
bench: setup
	$(PY) benchmarks/overhead.py
	$(PY) benchmarks/parse.py

## strip: remove outputs from the committed notebooks
strip: setup
	.venv/bin/nbstripout --keep-id notebooks/*.ipynb

## clean: remove generated runs and executed notebooks (keeps the scratch file)
clean:
	rm -rf data/runs papermill_runs/*.ipynb papermill_runs/*.html

help:
	@grep -E '^## ' Makefile | sed 's/^## /  make /'

.PHONY: setup demo lab test tio bench strip clean help
