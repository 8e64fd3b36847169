"""Folding perf script text: byte-for-byte the results of FlameGraph's stackcollapse-perf.pl
on its own test inputs, and invariants on perf script texts recorded here
(frame pointers, DWARF, -F subsets, -a with CPU columns); perf.data folded by perf scripts
over time ranges side by side as by one."""

import io
import os
import random
import re
import struct
import subprocess
from collections import Counter

import pytest

from iolab.machine.perf import fold_perf_data, sample_times, script_argv, time_ranges
from iolab.read.fold import FoldOptions, FoldParts, fold_blocks, fold_file, fold_lines, fold_stream, read_folded
from support.marks import needs_shared
from support.paths import FIXTURES, PUBLISHED

OPTS = {
    "pid": dict(pid=True),
    "tid": dict(tid=True),
    "kernel": dict(kernel=True),
    "jit": dict(jit=True),
    "all": dict(kernel=True, jit=True),
    "addrs": dict(addrs=True),
    "default": {},
}


def fold_text(text: str, options: FoldOptions | None = None):
    """``perf script`` text held in memory, folded by the library's own text-stream path."""
    return fold_stream(io.StringIO(text, newline=""), options)


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
    chunk boundaries anywhere (64 bytes: inside lines and samples)."""
    from iolab.read import fold

    monkeypatch.setattr(fold, "CHUNK", chunk)
    if chunk == 64:  # the chain cache full and started again, over and over
        monkeypatch.setattr(fold, "MAX_CHAINS", 3)
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
        "# 1 2 looks like a header\n\tffff a (m)\n\n",
        "fio 1 [000] 1.0: 7 cpu-clock:\n\tffff \xe4 (m\xe9)\n\nf\xe9o 2 [000] 1.0: 7 cpu-clock:\n\tffff b (m)\n\n",
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


def test_perl_rules_where_they_surprise():
    """stackcollapse-perf.pl's output (run on this text): a tid of 0 (the idle task's
    ``swapper 0/0``) counts as none, a period of 0 as 1; a module path may hold spaces; the
    ``L`` of a Java class is cut whenever the process name starts with java (--pid, --tid)."""
    text = (
        "swapper     0/0     [000] 1.0:          0 cpu-clock: \n\tffffffff1 do_idle ([kernel.kallsyms])\n\n"
        "fio 77/78 [001] 1.5: 5 cpu-clock: \n\tffff1 func1 (/tmp/my dir/x.so)\n"
        "\t7f00 [unknown] (/memfd:doublemapper (deleted))\n\n"
        "fio 77/0 [001] 1.6: 00 cpu-clock: \n\tffff1 main (/usr/bin/fio)\n\n"
        "java 3/4 [000] 2.0: 1 cpu-clock: \n\t1 Lcom/x/Y;m (/tmp/perf-3.map)\n\n"
    )
    perl = {
        "tid": ["fio-77/78;[unknown] ;func1 5", "fio-?/77;main 0", "java-3/4;com/x/Y:m 1", "swapper-?/0;do_idle 1"],
        "all": ["fio;[unknown] ;func1 5", "fio;main 0", "java;com/x/Y:m_[j] 1", "swapper;do_idle_[k] 1"],
    }
    for opt, expected in perl.items():
        assert fold_text(text, FoldOptions(**OPTS[opt])).lines() == expected
        assert fold_lines(text.splitlines(keepends=True), FoldOptions(**OPTS[opt])).lines() == expected


def _summary(folded):
    return folded.text(), folded.samples, folded.skipped_other_events, folded.unrecognized_lines, folded.event


@pytest.mark.parametrize("opt", ["default", "tid"])
def test_parts_fold_as_the_whole_text(opt):
    """perf script run over consecutive time ranges side by side (``fold_perf_data``): the
    parts' blocks, cut anywhere and arriving in any interleaving, fold as the whole text
    does — also when the first event (the one kept) is not known yet, and when a cut falls
    inside a sample or between the two newlines that end one."""
    rng = random.Random(22)
    sources = sorted((FIXTURES / "perf").glob("*.txt"))
    if PUBLISHED.exists():
        sources += sorted((PUBLISHED / "flamegraph-upstream/test").glob("*.txt"))
    texts = {source.name: source.read_bytes() for source in sources}
    # the kept event is the first one: a later part beginning with another must wait to know
    texts["two events"] = b"a 1 1.0: 7 cycles:\n\tf x (m)\n\n" + b"a 1 2.0: 5 instructions:\n\tf y (m)\n\n" * 50
    for name, data in texts.items():
        whole = _summary(fold_blocks([data], FoldOptions(**OPTS[opt])))
        for n in (2, 3, 4):
            cuts = sorted(rng.sample(range(1, len(data)), n - 1))
            if n == 2 and b"\n\n" in data[100:]:  # one cut between the two newlines after a sample
                cuts = [data.index(b"\n\n", 100) + 1]
            pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
            blocks = [
                [t[i : i + size] for i in range(0, len(t), size)] for t in pieces for size in [rng.randint(1, 5000)]
            ]
            parts = FoldParts(n, FoldOptions(**OPTS[opt]))
            pending = [(k, list(b)) for k, b in enumerate(blocks)]
            while pending:
                k, left = pending[rng.randrange(len(pending))]
                if left:
                    parts.feed(k, left.pop(0))
                else:
                    parts.end(k)
                    pending.remove((k, left))
            assert _summary(parts.result()) == whole, (name, n, cuts)
            parts = FoldParts(n, FoldOptions(**OPTS[opt]))  # the last part first, whole: the event unknown
            for k in reversed(range(n)):
                for block in blocks[k]:
                    parts.feed(k, block)
                parts.end(k)
            assert _summary(parts.result()) == whole, (name, n, cuts, "reversed")


def test_sample_times_and_time_ranges(tmp_path):
    """The first and last sample times from a perf.data header (perf's HEADER_SAMPLE_TIME
    feature, here after another one), and --time ranges that share and miss no ns."""
    features = (1 << 3) | (1 << 21)
    head = b"PERFILE2" + struct.pack("<QQ", 104, 136) + struct.pack("<QQQQQQ", 0, 0, 104, 0, 0, 0)
    head += features.to_bytes(32, "little")
    sections = struct.pack("<QQQQ", 136, 8, 144, 16)  # HOSTNAME's, then SAMPLE_TIME's (offset, size)
    data = tmp_path / "perf.data"
    data.write_bytes(head + sections + b"hostname" + struct.pack("<QQ", 5_000_000_001, 5_000_000_901))
    assert sample_times(data) == (5_000_000_001, 5_000_000_901)
    assert time_ranges(sample_times(data), 3) == [
        ["--time", ",5.000000301"],
        ["--time", "5.000000302,5.000000601"],
        ["--time", "5.000000602,"],
    ]
    assert time_ranges(None, 3) == time_ranges((1, 2), 3) == time_ranges((1, 900), 1) == [[]]
    data.write_bytes(head[:8] + struct.pack("<Q", 16))  # a pipe-mode header: no features
    assert sample_times(data) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="CPU-wide perf record needs root here")
def test_perf_data_in_parts_folds_as_one_perf_script(tmp_path):
    """A real all-CPU profile: perf scripts over 3 time ranges side by side give the stacks
    of one perf script's text, byte for byte."""
    data = tmp_path / "perf.data"
    subprocess.run(
        ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-a", "-g", "-o", str(data), "--", "sleep", "0.2"],
        check=True,
        capture_output=True,
    )
    assert len(time_ranges(sample_times(data), 3)) == 3
    text = subprocess.run(script_argv(data), check=True, capture_output=True).stdout
    via_text = _summary(fold_text(text.decode(errors="replace"), FoldOptions(tid=True)))
    assert via_text[1] > 100
    assert _summary(fold_perf_data(data, FoldOptions(tid=True), parts=3)) == via_text
