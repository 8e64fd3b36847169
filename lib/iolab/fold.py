"""``perf script`` text -> folded stacks, the plain-text format FlameGraph's tools share.

Input (``perf script``; any ``-F`` subset that keeps comm, tid and the call chain)::

    fio 4242 [000] 1234.5678:   1001001 cpu-clock:
            ffffffff81a0 io_submit_sqes ([kernel.kallsyms])
                  55d3c0 td_io_queue (/usr/bin/fio)

Output, one line per distinct stack, root first, then its weight::

    fio;td_io_queue;io_submit_sqes 1001001

Same output as ``stackcollapse-perf.pl`` (brendangregg/FlameGraph) for the same input and
options — checked on that project's own test inputs and expected results:

* weights are the sample periods when perf prints them, else 1 per sample;
* only events of the first event type are kept (mixing cycles and instructions misleads),
  unless ``event_filter`` names one;
* the process name (spaces as ``_``) is the root frame; ``pid``/``tid`` append ``-PID`` or
  ``-PID/TID`` (``?`` when perf printed only the tid);
* ``[unknown]`` frames take their module's name when known (``addrs`` keeps the address);
  inlined frames (``a->b``) are split, the inner ones marked ``_[i]``; ``kernel``/``jit``
  mark kernel and JIT frames ``_[k]``/``_[j]``; ``+0x..`` offsets and argument lists are cut.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, TextIO

_HEADER = re.compile(r"^(\S.+?)\s+(\d+)/*(\d+)*\s+")
_EVENT = re.compile(r":\s*(\d+)*\s+(\S+):\s*$")
_FRAME = re.compile(r"^\s*(\w+)\s*(.+) \((\S*)\)")
_OFFSET = re.compile(r"\+0x[\da-f]+$")
_JIT_MAP = re.compile(r"/tmp/perf-\d+\.map")


@dataclass
class FoldOptions:
    pid: bool = False
    tid: bool = False
    kernel: bool = False
    jit: bool = False
    addrs: bool = False
    event_filter: str = ""


@dataclass
class Folded:
    """Folded stacks (stack -> weight) and what folding noticed."""
    stacks: Counter = field(default_factory=Counter)
    event: str = ""
    skipped_other_events: int = 0
    unrecognized_lines: int = 0
    samples: int = 0

    def lines(self) -> list[str]:
        return [f"{stack} {count}" for stack, count in sorted(self.stacks.items())]

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines())

    @property
    def total(self) -> int:
        return sum(self.stacks.values())


def _tidy(func: str, mod: str, pc: str, pname: str, opts: FoldOptions, inlined: bool) -> str:
    if func == "[unknown]":
        name = re.sub(r".*/", "", mod) if mod != "[unknown]" else "unknown"
        func = f"[{name} <{pc}>]" if opts.addrs else f"[{name}]"
    func = func.replace(";", ":")
    if not re.search(r"\.\(.*\)\.", func):  # not a Go method such as net/http.(*Client).Do
        func = re.sub(r"\((?!anonymous namespace\)).*", "", func)
    func = func.replace('"', "").replace("'", "")
    if pname == "java" and "/" in func:
        func = re.sub(r"^L", "", func)
    if inlined:
        if "_[i]" not in func:
            func += "_[i]"
    elif opts.kernel and re.search(r"(^\[|vmlinux$)", mod) and "unknown" not in mod:
        func += "_[k]"
    elif opts.jit and _JIT_MAP.search(mod):
        if "_[j]" not in func:
            func += "_[j]"
    return func


def fold_lines(lines: Iterable[str], options: FoldOptions | None = None) -> Folded:
    """Fold ``perf script`` lines (see the module docstring)."""
    opts = options or FoldOptions()
    out = Folded(event=opts.event_filter)
    stack: list[str] = []
    pname: str | None = None
    period = 1
    skip = False
    # the same (function, module) pairs recur in almost every sample: tidy each once
    cache: dict[tuple, list[str]] = {}
    frame_match, header_match = _FRAME.match, _HEADER.match
    for raw in lines:
        first = raw[:1]
        if first == "#":
            continue
        indented = first in ("\t", " ")
        f = None
        if not skip and (indented or (first not in ("\n", "") and not header_match(raw))):
            f = frame_match(raw)  # frames are indented, except in very old perf script output
        if f is not None:
            pc, rawfunc, mod = f.groups()
            key = (rawfunc, mod, pname == "java", pc if opts.addrs else None)
            frames = cache.get(key)
            if frames is None:
                frames = []
                bare = _OFFSET.sub("", rawfunc)
                if not bare.startswith("("):
                    for func in bare.split("->"):
                        frames.append(_tidy(func, mod, pc, pname or "", opts, bool(frames)))
                cache[key] = frames
            stack.extend(reversed(frames))  # leaf first here; reversed once per sample
            continue
        line = raw.rstrip("\n")
        if not line:
            if not skip:
                if stack or pname is not None:
                    stack.append(pname or "")
                if stack:
                    out.stacks[";".join(reversed(stack))] += period
                    out.samples += 1
            stack, pname, skip, period = [], None, False, 1
            continue
        if skip:
            continue
        m = header_match(line)
        if m:
            comm, first_id, second_id = m.group(1), m.group(2), m.group(3)
            pid, tid = (first_id, second_id) if second_id else ("?", first_id)
            pname = f"{comm}-{pid}/{tid}" if opts.tid else f"{comm}-{pid}" if opts.pid else comm
            pname = pname.replace(" ", "_")
            ev = _EVENT.search(line)
            if ev:
                event = ev.group(2)
                if not out.event:
                    out.event = event
                elif event != out.event:
                    out.skipped_other_events += 1
                    skip = True
                    continue
                period = int(ev.group(1)) if ev.group(1) else 1
            continue
        out.unrecognized_lines += 1
    # perf script ends every sample with a blank line; like stackcollapse-perf.pl, a
    # truncated last sample without one is not counted
    return out


def fold_file(path: str | Path, options: FoldOptions | None = None) -> Folded:
    with open(path, errors="replace") as f:
        return fold_lines(f, options)


def read_folded(source: str | Path | TextIO) -> Counter:
    """Folded-stack text (``a;b;c 12`` per line) -> Counter. Of the two count columns
    FlameGraph's difffolded.pl writes (before, after), the last one is read."""
    text = Path(source).read_text() if isinstance(source, (str, Path)) else source.read()
    stacks: Counter = Counter()
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, _, count = line.rstrip().rpartition(" ")
        if " " in stack and stack.rsplit(" ", 1)[1].isdigit():  # two-column diff input
            stack = stack.rsplit(" ", 1)[0]
        stacks[stack] += int(count)
    return stacks

