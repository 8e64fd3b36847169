"""The search spec's schema (``iolab.measure.search_spec``): the shipped specs read whole, every
bad spec tests/test_search.py and
tests/test_names_and_inputs.py refuse is refused with the same words, and hostile specs get
one message naming the file, the key and what to write. Nothing runs."""

import re

import pytest
import yaml

from iolab.core.errors import InputError
from iolab.measure import search_spec
from support.paths import REPO

BASE = {"rw": "randread", "bs": "4k", "ioengine": "psync", "runtime": "300ms"}
SPEC = {"target": "scratch", "size": "16m", "axes": {"iodepth": [1]}}


def spec_file(tmp_path, **doc):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "target": "scratch", "size": "16m", "base": BASE, **doc}))
    return path


def refused(source) -> str:
    with pytest.raises(InputError) as err:
        search_spec.load_spec(source)
    text = str(err.value)
    assert "\n" not in text and "pydantic" not in text.lower() and "Input should" not in text
    return text


def test_the_shipped_specs_read_whole():
    paths = sorted((REPO / "data" / "examples").glob("search_*.yaml"))
    specs = [search_spec.load_spec(p) for p in paths]
    assert {s.name for s in specs} >= {"small", "seed003"} and all(s.path for s in specs)
    small = next(s for s in specs if s.name == "small")
    assert small.target == ["loop:128m", "loop:128m"] and small.cpus == [0, 1] and small.repeats == 3
    assert small.axes["stress"] == ["idle", "stressed"] and small.warmup == "run" and small.order == "random"
    seed003 = next(s for s in specs if s.name == "seed003")
    assert seed003.axes["smt"] == [True, False] and seed003.axes["siblings"] == ["used", "not used"]
    assert len(seed003.target) == 16 and seed003.base["ramp_time"] == "2s"


@pytest.mark.parametrize(
    "doc, words",
    [  # tests/test_search.py's bad specs, with its words
        ({"axis": {"iodepth": [1]}}, "unknown key 'axis' (did you mean 'axes'?)"),
        ({"axes": {}}, "the spec has no axes"),
        ({"axes": {"iodepth": []}}, "axis 'iodepth' has no values"),
        ({"axes": {"stress": ["busy"]}}, "stress: 'busy' is not one of idle, stressed"),
        ({"axes": {"devices": [1, 2]}}, "the devices axis goes up to 2 but the spec lists 1 target"),
        ({"axes": {"iodepth": [1]}, "order": "sorted"}, "order 'sorted': choose random"),
        ({"axes": {"iodepth": [1, 1]}}, "lists a value twice"),
        ({"axes": {"iodepth": [1]}, "repeats": 0}, "repeats is 0, not a whole number from 1 to 1000"),
        ({"axes": {"iodepth": [1]}, "stop": {"ci": 5}}, "stop: give {metric: iops, ci_pct: 5"),
        # tests/test_names_and_inputs.py's, and the warm-up's one spelling
        ({"axes": {"iodepth": [1]}, "base": [1, 2]}, "base is a list ([1, 2]), not a mapping of fio option"),
        ({"axes": {"iodepth": [1]}, "stop": {"ci_pct": "abc"}}, "stop.ci_pct 'abc' is not a percentage"),
        ({"axes": {"iodepth": [{"a": 1}]}}, "axis 'iodepth' has {'a': 1}, a mapping"),
        ({"axes": [1]}, "the spec has no axes"),
        ({"axes": {"iodepth": [1]}, "name": "\x1b[2J"}, "search name '\\x1b[2J' has '\\x1b'"),
        ({"axes": {"iodepth": [1]}, "warmup": 2}, "warmup: 2 is not one of run (one discarded run first)"),
        ({"axes": {"iodepth": [1]}, "warmup": "2s", "base": {"ramp_time": "1s"}}, "keep one of them"),
    ],
)
def test_bad_specs_are_refused_with_what_to_fix(tmp_path, doc, words):
    path = spec_file(tmp_path, **doc)
    assert refused(path).startswith(f"{path}: ") and words in refused(path)


@pytest.mark.parametrize(
    "doc, words",
    [
        ({"Axes": {"iodepth": [1]}, "repat": 2}, "unknown key 'Axes' (did you mean 'axes'?), 'repat' (did you mean"),
        ({"axes": {"iodepth": [1]}, "repeats": 10**30}, "repeats is 1000000000000000000000000000000, not a whole"),
        ({"axes": {"iodepth": [1]}, "repeats": True}, "repeats is true/false (True), not a whole number"),
        ({"axes": {"iodepth": [1]}, "seed": float("inf")}, "seed is a number (inf), not a whole number"),
        ({"axes": {"iodepth": [1]}, "seed": 3.7}, "seed is a number (3.7), not a whole number"),
        ({"axes": {"iodepth": [1]}, "target": []}, "target is [], not scratch, loop:SIZE"),
        ({"axes": {"iodepth": [1]}, "target": None}, "target is empty, not scratch, loop:SIZE"),
        ({"axes": {"iodepth": [1]}, "target": [["a"]]}, "target[0] is a list (['a']), not an item of scratch"),
        ({"axes": {"iodepth": [1]}, "size": None}, "size is empty, not a size fio reads (the scratch"),
        ({"axes": {"iodepth": [1]}, "cpus": "abc"}, "cpus: cannot read the CPU list 'abc'"),
        ({"axes": {"iodepth": [1]}, "name": "../../x"}, "search name '../../x' would leave its folder"),
        ({"axes": {"iodepth": [1]}, "name": [1]}, "name is a list ([1]), not a search name"),
        ({"axes": {"iodepth": [1]}, "hosts": ["h1", " h1:8765"]}, "host h1, h1:8765 is named twice"),
        ({"axes": {"iodepth": [1]}, "hosts": "a..b"}, "host 'a..b' is not address[:port]"),
        ({"axes": {"iodepth": [1]}, "hosts_file": "nope.yaml"}, "no such hosts file"),
        ({"axes": {"cores": [0]}}, "cores has 0, which is not a whole number >= 1"),
        ({"axes": {"iodepth": [1]}, "stop": {"min_repeats": 1}}, "stop.min_repeats must be at least 2"),
    ],
)
def test_hostile_specs_name_the_file_and_the_key(tmp_path, doc, words):
    path = spec_file(tmp_path, **doc)
    said = refused(path)
    assert said.startswith(f"{path}: ") and words in said


def test_spellings_read_as_before(tmp_path):
    got = search_spec.load_spec(
        spec_file(
            tmp_path,
            axes={" stress ": [" Stressed", "IDLE"], "siblings": ["not_used"], "scheduler": [" none "], "iodepth": 4},
            target=["loop:1m", " loop:2m "],
            size=1024,
            repeats="3",
            seed=" 7 ",
            order=" Given ",
            cpus="0",
            warmup="500ms",
            name=2024,
            stop={"min_repeats": 4},
        )
    )
    assert got.axes == {"stress": ["stressed", "idle"], "siblings": ["not used"], "scheduler": ["none"], "iodepth": [4]}
    assert (got.target, got.size, got.repeats, got.seed, got.order, got.cpus) == (
        ["loop:1m", "loop:2m"],
        "1024",
        3,
        7,
        "given",
        [0],
    )
    assert got.warmup == "0.5s" and got.base["ramp_time"] == "500ms" and got.name == "2024"
    assert got.stop == {"metric": "iops", "ci_pct": 5.0, "min_repeats": 4}
    plain = search_spec.load_spec({**SPEC, " base ": None, "warmup": None})
    assert plain.name == "search" and plain.base == {} and plain.warmup == "none" and plain.path is None
    assert search_spec.load_spec(spec_file(tmp_path, name=None, axes={"iodepth": [1]})).name == "spec"


def test_hosts_and_their_file_relative_to_the_spec(tmp_path):
    (tmp_path / "hosts.yaml").write_text("h1: {via: env}\nh2:8766: ssh -tt root@h2\n")
    got = search_spec.load_spec(spec_file(tmp_path, axes={"iodepth": [1]}, hosts_file="hosts.yaml"))
    assert got.hosts == ["h1", "h2:8766"] and got.hosts_file == str(tmp_path / "hosts.yaml")
    assert search_spec.load_spec(spec_file(tmp_path, axes={"iodepth": [1]}, hosts=" h1, h3 ")).hosts == ["h1", "h3"]
    (tmp_path / "hosts.yaml").write_text("h1: {via: 5}\n")
    said = refused(spec_file(tmp_path, axes={"iodepth": [1]}, hosts_file="hosts.yaml"))
    assert "hosts.yaml: host h1: via is a number (5), not a command prefix" in said


def test_a_mapping_is_named_the_search_spec():
    assert search_spec.load_spec({**SPEC, "name": "ok"}).name == "ok"
    said = refused({**SPEC, "name": ".."})
    assert said.startswith("the search spec: search name '..' would leave its folder")
    assert re.search(r"^the search spec: unknown key 'sizes' \(did you mean 'size'\?\)", refused({**SPEC, "sizes": 1}))


def test_files_that_are_not_specs(tmp_path):
    assert "no such search spec" in refused(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("axes: [1, 2\n")
    assert "is not YAML" in refused(tmp_path / "bad.yaml")
    (tmp_path / "list.yaml").write_text("- axes\n")
    assert "holds a list, not a mapping of keys (name, description, target" in refused(tmp_path / "list.yaml")
