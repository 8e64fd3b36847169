#!/usr/bin/env bash
# make test's run: the whole suite (WORKERS pytest-xdist workers), and beside it, in one more
# process, the tests at the lowest versions iolab accepts (.venv-lowest; the test files after
# --); the latter's output is printed after the suite's. Exit 0 when both passed, 1 when
# either failed.
#
# A signal to this script (Ctrl-C, SIGTERM from make or timeout, SIGHUP) reaches both runs
# as a Ctrl-C reaches an interactive pytest, each run's whole process group: they unwind (the
# NVMe lab's guest stopped, loop devices detached, kernels shut down) before this exits
# 128+signal. Job control (set -m) gives each run a group of its own; without it a
# background run would ignore SIGINT.
#
#     [PY=.venv/bin/python] bash scripts/test.sh WORKERS [pytest options] -- LOWEST_TEST_FILES...
set -u -m
cd "$(dirname "$0")/.."
workers=$1
shift
suite_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do suite_args+=("$1"); shift; done
[ $# -gt 0 ] && shift  # the --
lowest=$(mktemp)
signalled=0
floors=
suite=
stop() {  # $1: the exit status a signal gives
    signalled=$1
    for run in $suite $floors; do kill -INT -- "-$run" 2>/dev/null; done
}
trap 'stop 130' INT
trap 'stop 143' TERM
trap 'stop 129' HUP
trap 'rm -f "$lowest"' EXIT

.venv-lowest/bin/python -m pytest -q -ra -p no:cacheprovider -p no:xdist "$@" >"$lowest" 2>&1 &
floors=$!
"${PY:-.venv/bin/python}" -m pytest -q -ra -n "$workers" ${suite_args[@]+"${suite_args[@]}"} tests &
suite=$!

finished() {  # the exit status of background run $1, once it has ended (a trapped signal interrupts wait)
    local rc
    wait "$1"
    rc=$?
    while kill -0 "$1" 2>/dev/null; do
        wait "$1"
        rc=$?
    done
    return $rc
}
finished "$suite"
suite_rc=$?
finished "$floors"
floors_rc=$?
echo "-- at the lowest versions (.venv-lowest), run beside the suite:"
cat "$lowest"
[ "$signalled" -ne 0 ] && exit "$signalled"
exit $((suite_rc || floors_rc))
