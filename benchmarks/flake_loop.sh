#!/usr/bin/env bash
# The signal, interrupt, lock and browser tests ROUNDS times in a row, in the foreground (fg)
# or as a background job would run them (bg: SIGINT ignored, stdin /dev/null, no terminal),
# each round with make test's workers. Prints one line per round and the count at the end.
#   bash benchmarks/flake_loop.sh 20 fg ; bash benchmarks/flake_loop.sh 20 bg
set -u
cd "$(dirname "$0")/.."
rounds=${1:?rounds} mode=${2:?fg or bg}
sel='ctrl_c or interrupt or signal or sigkill or killed or busy or lock or sigterm or browser or jupyterlab or renders'
files=(tests/test_signals.py tests/test_cli.py tests/test_kernelpath.py tests/test_publish.py tests/test_sweep.py
       tests/test_search.py tests/test_knobs.py tests/test_hosts.py tests/test_browser.py tests/test_browser_batch.py
       tests/test_browser_publish.py)
logs=$(mktemp -d)
workers=$(( $(nproc) + 1 ))
passed=0
for i in $(seq 1 "$rounds"); do
    log=$logs/$mode-$i.log
    if [ "$mode" = bg ]; then
        timeout 900 setsid bash -c "trap '' INT; exec .venv/bin/python -m pytest -q -n $workers -k '$sel' ${files[*]} < /dev/null" > "$log" 2>&1
    else
        timeout 900 .venv/bin/python -m pytest -q -n "$workers" -k "$sel" "${files[@]}" > "$log" 2>&1
    fi
    rc=$?
    [ $rc -eq 0 ] && passed=$((passed + 1))
    echo "$mode round $i: exit $rc, $(tail -1 "$log")"
done
echo "$mode: $passed of $rounds rounds passed (logs in $logs)"
