"""Folding perf script text: byte-for-byte the results of FlameGraph's stackcollapse-perf.pl
on its own test inputs, and invariants on perf script texts recorded here
(frame pointers, DWARF, -F subsets, -a with CPU columns)."""

import re
from collections import Counter

import pytest

from conftest import FIXTURES, PUBLISHED, needs_shared
from iolab.read.fold import FoldOptions, fold_file, fold_lines, read_folded

OPTS = {
    "pid": dict(pid=True),
    "tid": dict(tid=True),
    "kernel": dict(kernel=True),
    "jit": dict(jit=True),
    "all": dict(kernel=True, jit=True),
    "addrs": dict(addrs=True),
    "default": {},
}


def upstream_cases():
    if not PUBLISHED.exists():
        return []
    base = PUBLISHED / "flamegraph-upstream"
    expected = sorted((base / "test/results").glob("*.txt")) + sorted((base / "computed-default").glob("*.txt"))
    out = []
    for exp in expected:
        name, opt = exp.stem.rsplit("-collapsed-", 1)
        out.append(pytest.param(base / "test" / f"{name}.txt", exp, opt, id=exp.stem))
    return out


@needs_shared
@pytest.mark.parametrize("source,expected,opt", upstream_cases())
def test_same_output_as_stackcollapse_perf(source, expected, opt):
    got = fold_file(source, FoldOptions(**OPTS[opt]))
    assert got.text() == "".join(sorted(expected.read_text().splitlines(keepends=True)))


def _headers(path):
    return [line for line in open(path) if line.strip() and not line[0].isspace() and not line.startswith("#")]


@pytest.mark.parametrize("name", ["fio_fp_default.txt", "fio_dwarf.txt", "fio_all_cpus.txt"])
def test_recorded_profiles_weights_are_periods(name):
    path = FIXTURES / "perf" / name
    folded = fold_file(path)
    periods = [int(re.search(r":\s+(\d+) cpu-clock:", h).group(1)) for h in _headers(path)]
    assert folded.samples == len(periods) > 20
    assert folded.total == sum(periods)
    assert folded.event == "cpu-clock"
    assert any(stack.startswith("fio;") for stack in folded.stacks)


def test_field_subset_counts_samples():
    """-F comm,tid,ip,sym,dso: no time, no period, no event: 1 per sample."""
    path = FIXTURES / "perf/fio_fp_fields_subset.txt"
    folded = fold_file(path)
    assert folded.total == folded.samples == len(_headers(path))
    assert folded.unrecognized_lines == 0


def test_all_cpus_with_pid_tid_and_kernel_marks():
    folded = fold_file(FIXTURES / "perf/fio_all_cpus.txt", FoldOptions(tid=True, kernel=True))
    roots = {s.split(";")[0] for s in folded.stacks}
    assert any(re.fullmatch(r"fio-\d+/\d+", r) for r in roots)
    assert any(f.endswith("_[k]") for s in folded.stacks for f in s.split(";"))


def test_dwarf_resolves_fio_frames():
    folded = fold_file(FIXTURES / "perf/fio_dwarf.txt")
    frames = {f for s in folded.stacks for f in s.split(";")}
    assert frames & {"main", "__libc_start_main", "run_threads", "thread_main", "fio_backend"}


def test_root_first_order_and_tidying():
    text = """fio 77 [000] 1.000: 5 cpu-clock:
\tffffffff1 io_submit_sqes+0x10 ([kernel.kallsyms])
\t55a td_io_queue(struct thread_data*) (/usr/bin/fio)
\t0 [unknown] (/usr/lib/libc.so.6)

"""
    folded = fold_lines(text.splitlines(keepends=True), FoldOptions(kernel=True))
    assert folded.lines() == ["fio;[libc.so.6];td_io_queue;io_submit_sqes_[k] 5"]


def test_read_folded(tmp_path):
    p = tmp_path / "x.folded"
    p.write_text("a;b 3\na;b 2\nc 1\n")
    assert read_folded(p) == Counter({"a;b": 5, "c": 1})


@pytest.mark.parametrize("chunk", [64, 4096, 1 << 22])
@pytest.mark.parametrize("opt", sorted(OPTS))
def test_the_chunked_fast_path_folds_as_the_line_by_line_one(chunk, opt, monkeypatch):
    """fold_file (whole samples, each distinct call chain folded once, read in chunks) gives
    what fold_lines gives line by line, on every recorded profile and upstream input, with
    chunk boundaries anywhere (64 characters: inside lines and samples)."""
    from iolab.read import fold

    monkeypatch.setattr(fold, "CHUNK", chunk)
    sources = sorted((FIXTURES / "perf").glob("*.txt"))
    if PUBLISHED.exists():
        sources += sorted((PUBLISHED / "flamegraph-upstream/test").glob("*.txt"))
    for source in sources:
        fast = fold_file(source, FoldOptions(**OPTS[opt]))
        slow = fold_lines(open(source, errors="replace"), FoldOptions(**OPTS[opt]))
        assert (fast.text(), fast.samples, fast.skipped_other_events, fast.unrecognized_lines, fast.event) == (
            slow.text(),
            slow.samples,
            slow.skipped_other_events,
            slow.unrecognized_lines,
            slow.event,
        ), source.name


def test_odd_texts_fold_alike_both_ways():
    from iolab.read.fold import fold_text

    texts = [
        "",
        "\n\n\n",
        "# comment\n\n",
        "fio 1 [000] 1.0: 5 cpu-clock:\n",
        "fio 1 [000] 1.0: 5 cpu-clock:\n\n",
        "fio 1 [000] 1.0: 5 cpu-clock:\n\tffff a (m)\n\n\n\nfio 2 [000] 1.0: 5 cycles:\n\tffff b (m)\n\n",
        "junk line\n\tffff a (m)\n\n",
        "\tffff a (m)\n\n",
        "fio 1 [000] 1.0: 7 cpu-clock:\n  # odd\n\tffff a (m)\n\n",
        "java 3 [000] 1.0: 1 cpu-clock:\n\t1 Lcom/x/Y;m (/tmp/perf-3.map)\n\n",
        "fio 1 [000] 1.0: 7 cpu-clock:\nfio 2 [000] 1.0: 7 cpu-clock:\n\tffff a (m)\n\n",
        "fio 1 [000] 1.0: 7 cpu-clock:\r\n\tffff a (m)\r\n\r\n",
    ]
    for text in texts:
        for opts in (FoldOptions(), FoldOptions(kernel=True, jit=True, pid=True)):
            fast, slow = fold_text(text, opts), fold_lines(text.splitlines(keepends=True), opts)
            assert (fast.text(), fast.samples, fast.unrecognized_lines, fast.skipped_other_events) == (
                slow.text(),
                slow.samples,
                slow.unrecognized_lines,
                slow.skipped_other_events,
            ), repr(text)
