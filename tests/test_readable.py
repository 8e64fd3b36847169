"""Tables and text as people read them (iolab.core.readable, iolab.core.columns): labels with
units for every column the kit's frames produce, cells in words, one rule for what an interval
can be, lines broken at spaces. Pure functions on small frames: no fio."""

import math

import pandas as pd

from iolab.core.columns import bounds, clipped, label, labelled
from iolab.core.readable import readable_cell, readable_tables, table_html, wrapped


def test_every_column_of_the_kits_frames_reads_as_words_with_one_unit():
    """The raw names notebooks 01, 03 and 05 showed (issue 42), as their headers now read."""
    assert {
        n: label(n)
        for n in (
            "iops_mean",
            "iops_ci_low",
            "mean_lat_us_ci_low",
            "change_pct",
            "low_pct",
            "p_value",
            "f_stat",
            "efficiency_low_pct",
            "littles_ok",
            "iops_median",
            "low_iops",
            "iops_cv_pct",
            "samples",
            "cpu_busy_pct_run_median",
        )
    } == {
        "iops_mean": "IOPS mean (IO/s)",
        "iops_ci_low": "IOPS 95 % CI low (IO/s)",
        "mean_lat_us_ci_low": "mean latency 95 % CI low (µs)",
        "change_pct": "change (%)",
        "low_pct": "difference 95 % CI low (%)",
        "p_value": "p-value",
        "f_stat": "F statistic",
        "efficiency_low_pct": "efficiency 95 % CI low (%)",
        "littles_ok": "Little's law holds",
        "iops_median": "IOPS median (IO/s)",
        "low_iops": "IOPS at low level (IO/s)",
        "iops_cv_pct": "IOPS CV (%)",
        "samples": "samples",  # not "samples (samples)"
        "cpu_busy_pct_run_median": "CPU busy run median (%)",
    }
    assert label("separated") == "intervals apart" and label("n") == "runs"
    assert label("level_index") == "level index" and labelled("level_index")  # any snake_case name: words
    assert not labelled("io_uring") and not labelled("config")  # a setting's value stays as it is


def test_one_rule_for_what_a_quantity_can_be():
    assert bounds("iops") == bounds("dev_read_ios") == bounds("clat_p99_us_ci_low") == (0, math.inf)
    assert bounds("cpu_busy_pct") == bounds("dev_util_pct") == bounds("cpu_busy_pct_mean") == (0, 100)
    assert bounds("change_pct") == bounds("ratio_pct") == (-100, math.inf)  # a change is not a share
    assert bounds("other_load_pct") == bounds("interaction_pct") == (-math.inf, math.inf)
    assert clipped(-169.0, 1000.0, "dev_read_ios") == (0, 1000)  # notebook 06's "415 [-169, 1,000]"
    assert clipped(60.0, 121.0, "cpu_busy_pct") == (60, 100)
    low, high = clipped(math.nan, math.nan, "iops")
    assert math.isnan(low) and math.isnan(high)


def test_cells_read_as_words_and_tables_keep_their_lines():
    assert [readable_cell(t) for t in ("True", "False", "NaN", "<NA>", "None", "32.0", "8.00", "{'ok': 72}")] == [
        "yes",
        "no",
        "–",
        "–",
        "–",
        "32",
        "8",
        "ok 72",
    ]
    assert readable_cell("2.596134") == "2.60" and readable_cell("io_uring") == "io_uring"
    frame = pd.DataFrame(
        {
            "qd": [32.0, 8.0],
            "littles_ok": [True, False],
            "separated": pd.array([True, None], dtype="boolean"),
            "bw_bytes_s": [275873792.0, math.nan],
            "status": [{"ok": 72}, {"ok": 3, "failed": 1}],
            "verdict": ["x", "a sentence long enough to wrap at its spaces, never mid-word"],
        }
    )
    html = table_html(frame)
    for shown in (">32<", ">8<", ">yes<", ">no<", ">–<", ">263 MiB/s<", ">ok 72<", ">ok 3, failed 1<"):
        assert shown in html, shown
    assert '<th title="littles_ok">Little&#x27;s law holds</th>' in html
    assert '<th title="bw_bytes_s">bandwidth</th>' in html  # the cells carry their unit: the header does not
    assert ">263 MiB/s<" in html and "iolab-short" in html and "iolab-text" in html  # short cells on one line
    assert "32.0" not in html and "True" not in html and "NaN" not in html
    assert readable_tables(html) == html  # idempotent
    clock = table_html(pd.DataFrame({"clock_ghz": [3.3, 3.0, 2.6], "cores": [8.0, 8.0, math.nan]}))
    assert ">3.00<" in clock and ">3<" not in clock and ">8<" in clock  # one precision per column
    stack = table_html(pd.DataFrame({"kstack": ["do_syscall_64->__do_sys_io_uring_enter->io_cqring_wait"]}))
    assert "do_syscall_64-&gt;<wbr>__do_sys_io_uring_enter-&gt;<wbr>io_" in stack  # breaks: not one wide word
    assert "<th>0</th>" not in html and "<th></th>" not in html  # an index that only counts rows is left out
    named = table_html(pd.DataFrame({"iops": [1.0, 2.0]}, index=pd.Index([32, 64], name="qd")))
    assert ">32</th>" in named and ">64</th>" in named  # one that names the rows stays
    long = table_html(pd.DataFrame({"iops": range(500)}))
    assert (
        "<th>" not in long.split("<tbody>")[1] and ">499<" in long and "500 rows × 1 columns" in long
    )  # elided as pandas does


def test_lines_break_at_spaces_only():
    line = "x " * 45 + "runtime='500ms' stress-ng " + "y" * 120
    lines = wrapped(line).splitlines()
    assert lines[1].strip() == "runtime='500ms' stress-ng" and lines[2].strip() == "y" * 120
