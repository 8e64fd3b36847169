# iolab — `make help` lists the targets.
.DEFAULT_GOAL := help
PY := .venv/bin/python
PORT ?= 8888
IP ?= 127.0.0.1
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) + 1 )))

## setup: install what is missing (fio, linux-perf, .venv, Jupyter kernel)
setup:
	@bash scripts/setup.sh

## setup-dev: setup, plus the test and lint tools (the [dev] extra)
setup-dev:
	@bash scripts/setup.sh --dev

## demo: run the flagship notebooks headless on the scratch file; executed notebooks + HTML in papermill_runs/
demo: setup
	$(PY) -m iolab.cli demo

## lab: JupyterLab on the project folder (README.md at its top, notebooks/ open) with the project's kernel (http://127.0.0.1:8888/lab/tree/notebooks; PORT=8889, IP=0.0.0.0, LAB_ARGS for more)
lab: setup
	@$(PY) -m iolab.cli lab --port "$(PORT)" --ip "$(IP)" $(LAB_ARGS)

## seeds: reproduce every seed write-up here, quick (about 10 min on 2 cores): papermill_runs/seeds/index.html and a page per seed (SEEDS_ARGS="--device /dev/nvme0n1" for an SSD; SEEDS_ARGS=--full for the whole method)
seeds: setup tio
	$(PY) -m iolab.cli seeds $(if $(findstring --full,$(SEEDS_ARGS)),,--quick) $(filter-out --full,$(SEEDS_ARGS))

## seeds-nvmelab: make seeds inside the NVMe lab, on its emulated NVMe SSDs (polled, passthrough: the steps a loop device skips; an emulator's numbers): papermill_runs/seeds-nvmelab/index.html
seeds-nvmelab: setup-nvmelab tio
	$(PY) -m iolab.cli nvmelab --timeout 5400 -- $(CURDIR)/$(PY) -m iolab.cli seeds --quick --device /dev/nvme0n1 /dev/nvme1n1 --opt-in-device-changes --out $(CURDIR)/papermill_runs/seeds-nvmelab $(SEEDS_ARGS)

## nvmelab: run NOTEBOOK=notebooks/NN_....ipynb in the NVMe lab (a QEMU guest with emulated NVMe SSDs; an emulator's numbers); P="-p name value ..." for parameters
nvmelab: setup-nvmelab
	@test -n "$(NOTEBOOK)" || { echo "make nvmelab: give NOTEBOOK=notebooks/02_single_core_tuning_ladder.ipynb (or 03, 06)" >&2; exit 2; }
	$(PY) -m iolab.cli nvmelab "$(NOTEBOOK)" $(P)

## setup-nvmelab: setup, plus the NVMe lab (qemu-system-x86, linux-image-amd64, busybox-static, nvme-cli)
setup-nvmelab:
	@bash scripts/setup.sh --nvmelab

## test: lint, then the whole test suite (real fio runs, short; browser tests in Debian's chromium), one pytest worker per CPU and one more (TEST_WORKERS=1 for one); beside it, in one more process, the pandas-version-sensitive tests on the lowest versions iolab accepts (their output after the suite's; scripts/test.sh)
test: setup-browser tio lint .venv-lowest/.installed
	PY=$(PY) bash scripts/test.sh $(TEST_WORKERS) --durations=15 -- $(LOWEST_IN_SUITE)

# what make test runs at the lowest versions too (every direct dependency at its floor, uv's lowest-direct
# resolution): the parsers, dtypes and the table read bit for bit, and the seeds' plan, a notebook run by
# iolab batch (papermill) and its write-up (tests/test_floors.py, first: its notebook's kernel starts
# while the suite's workers are still collecting, before the suite's load-sensitive tests)
LOWEST_IN_SUITE = tests/test_floors.py tests/test_fio_parse.py tests/test_store.py tests/test_runcache.py \
	tests/test_hostile_inputs.py -k "fio_parse or dtype or plain_csv or numeric_column or plain_one_exactly or at_these_versions"

## lint: ruff's checks and its formatting, as configured in pyproject.toml (ruff format lib tests benchmarks scripts fixes the latter)
lint: setup-dev
	$(PY) -m ruff check lib tests benchmarks scripts notebooks
	$(PY) -m ruff format --check lib tests benchmarks scripts

## test-nvme: the NVMe lab's tests alone (make test runs them too), with the tier's own output (tests/test_nvme_tier.py in one guest boot, ~1 min)
test-nvme: setup-browser tio
	$(PY) -m pytest -q -ra -s tests/test_nvmelab.py

## test-lowest: the reading, table and statistics tests on the lowest numpy, pandas and pyarrow iolab accepts (constraints/lowest.txt), in .venv-lowest
test-lowest: .venv-lowest/.installed
	.venv-lowest/bin/python -m pytest -q -ra -n $(TEST_WORKERS) $(LOWEST_TESTS)

LOWEST_TESTS ?= $(addprefix tests/test_,$(addsuffix .py,floors fio_parse runcache store corrupt_runs analysis repeat_stats versus \
	drift effects latency_dist series checks history results hostile_inputs explore))

.venv-lowest/.installed: pyproject.toml constraints/lowest.txt | setup
	@test -x .venv/bin/uv || .venv/bin/python -m pip install -q uv
	.venv/bin/uv venv -q --clear --python .venv/bin/python .venv-lowest  # anew: what an older install left must not stand for a floor
	.venv/bin/uv pip install -q --python .venv-lowest/bin/python --resolution lowest-direct -c constraints/lowest.txt -e . "pytest>=8" "pytest-xdist>=3.5"
	@touch $@

## setup-browser: setup, plus Debian's chromium for the browser tests and the NVMe lab for the NVMe tier
setup-browser:
	@bash scripts/setup.sh --dev --browser --nvmelab

## tio: build fio's t/io_uring from the source of the installed fio version
tio: setup
	@bash scripts/build_tio.sh

## bench: the benchmarks, each ratio measured side by side (FLAMEGRAPH_DIR=... for fold vs stackcollapse-perf.pl)
bench: setup
	$(PY) benchmarks/overhead.py
	$(PY) benchmarks/parse.py
	$(PY) benchmarks/fold.py
	$(PY) benchmarks/profile_overhead.py
	$(PY) benchmarks/threads_overhead.py
	$(PY) benchmarks/hosts_cost.py

## strip: remove outputs from the notebooks in the working tree (commits are stripped anyway: make setup-dev installs .gitattributes' nbstripout filter)
strip: setup-dev
	.venv/bin/nbstripout --keep-id notebooks/*.ipynb

## clean: remove generated runs and executed notebooks (keeps the scratch file)
clean:
	rm -rf data/runs papermill_runs/*.ipynb papermill_runs/*.html papermill_runs/*.results.json papermill_runs/.*.iolab-owned

help:
	@grep -E '^## ' Makefile | sed 's/^## /  make /'

.PHONY: setup setup-dev setup-browser setup-nvmelab nvmelab seeds seeds-nvmelab demo lab test lint test-nvme test-lowest tio bench strip clean help
