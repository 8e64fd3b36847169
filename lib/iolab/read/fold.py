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
from pathlib import Path

TYPE_CHECKING = False  # typing is not imported at run time: `iolab fold` must start fast
if TYPE_CHECKING:
    from typing import Iterable, TextIO

_HEADER = re.compile(r"^(\S.+?)\s+(\d+)/*(\d+)*\s+")
_EVENT = re.compile(r":\s*(\d+)*\s+(\S+):\s*$")
_FRAME = re.compile(r"^\s*(\w+)\s*(.+) \((\S*)\)")
_OFFSET = re.compile(r"\+0x[\da-f]+$")
_JIT_MAP = re.compile(r"/tmp/perf-\d+\.map")


class FoldOptions:
    """stackcollapse-perf.pl's options (a plain class: ``iolab fold`` must start fast, and
    the dataclasses module costs several ms to import)."""

    __slots__ = ("pid", "tid", "kernel", "jit", "addrs", "event_filter")

    def __init__(
        self,
        pid: bool = False,
        tid: bool = False,
        kernel: bool = False,
        jit: bool = False,
        addrs: bool = False,
        event_filter: str = "",
    ):
        self.pid, self.tid, self.kernel, self.jit, self.addrs = pid, tid, kernel, jit, addrs
        self.event_filter = event_filter

    def __repr__(self) -> str:
        return "FoldOptions(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


class Folded:
    """Folded stacks (stack -> weight) and what folding noticed."""

    def __init__(
        self,
        stacks: Counter | None = None,
        event: str = "",
        skipped_other_events: int = 0,
        unrecognized_lines: int = 0,
        samples: int = 0,
    ):
        self.stacks = stacks if stacks is not None else Counter()
        self.event, self.skipped_other_events = event, skipped_other_events
        self.unrecognized_lines, self.samples = unrecognized_lines, samples

    def lines(self) -> list[str]:
        return [f"{stack} {count}" for stack, count in sorted(self.stacks.items())]

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines())

    @property
    def total(self) -> int:
        return sum(self.stacks.values())

    @property
    def has_frames(self) -> bool:
        """Whether any sample had a call chain (a frame below its process name): without
        one the input was not ``perf script`` output of a profile with call graphs."""
        return any(";" in stack for stack in self.stacks)


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


MAX_CHAINS = 100_000  # distinct call chains kept (their text); beyond, the cache starts again


class _Folder:
    """The folding state machine of ``stackcollapse-perf.pl``, one line at a time
    (``line``), plus a fast path for whole samples (``sample``) that folds each distinct
    call chain once: a profile repeats the same chains, only the header lines differ."""

    def __init__(self, options: FoldOptions | None):
        self.opts = options or FoldOptions()
        self.out = Folded(event=self.opts.event_filter)
        self.stack: list[str] = []
        self.pname: str | None = None
        self.period, self.skip = 1, False
        # the same (function, module) pairs recur in almost every sample: tidy each once
        self.frames_of: dict[tuple, list[str]] = {}
        self.chains: dict[tuple[str, bool], str | None] = {}  # (frame lines, java) -> "root;...;leaf"
        self.lines: dict[str, list[str]] = {}  # a frame line -> its frames, leaf first
        self.lines_java: dict[str, list[str]] = {}  # the same in a java process (tidied otherwise)

    def frames(self, f: re.Match) -> list[str]:
        """A frame line's function(s), innermost first, tidied (cached)."""
        pc, rawfunc, mod = f.groups()
        key = (rawfunc, mod, self.pname == "java", pc if self.opts.addrs else None)
        frames = self.frames_of.get(key)
        if frames is None:
            frames = []
            bare = _OFFSET.sub("", rawfunc)
            if not bare.startswith("("):
                for func in bare.split("->"):
                    frames.append(_tidy(func, mod, pc, self.pname or "", self.opts, bool(frames)))
            self.frames_of[key] = frames
        return frames

    def header(self, line: str, m: re.Match) -> None:
        """A sample's header: its process name, period and event (other events skipped)."""
        comm, first_id, second_id = m.group(1), m.group(2), m.group(3)
        pid, tid = (first_id, second_id) if second_id else ("?", first_id)
        opts = self.opts
        pname = f"{comm}-{pid}/{tid}" if opts.tid else f"{comm}-{pid}" if opts.pid else comm
        self.pname = pname.replace(" ", "_")
        ev = _EVENT.search(line)
        if ev:
            event = ev.group(2)
            if not self.out.event:
                self.out.event = event
            elif event != self.out.event:
                self.out.skipped_other_events += 1
                self.skip = True
                return
            self.period = int(ev.group(1)) if ev.group(1) else 1

    def end(self) -> None:
        """A blank line: the sample is counted under its stack."""
        stack = self.stack
        if not self.skip:
            if stack or self.pname is not None:
                stack.append(self.pname or "")
            if stack:
                self.out.stacks[";".join(reversed(stack))] += self.period
                self.out.samples += 1
        self.stack, self.pname, self.skip, self.period = [], None, False, 1

    def line(self, raw: str) -> None:
        first = raw[:1]
        if first == "#":
            return
        f = None
        if not self.skip and (first in ("\t", " ") or (first not in ("\n", "") and not _HEADER.match(raw))):
            f = _FRAME.match(raw)  # frames are indented, except in very old perf script output
        if f is not None:
            self.stack.extend(reversed(self.frames(f)))  # leaf first here; reversed once per sample
            return
        line = raw.rstrip("\n")
        if not line:
            self.end()
        elif not self.skip:
            m = _HEADER.match(line)
            if m:
                self.header(line, m)
            else:
                self.out.unrecognized_lines += 1

    def sample(self, text: str) -> None:
        """One whole sample (its lines, without the blank line that ends it), as ``line``
        on each of them then on a blank line would: a header line then indented frames
        take the fast path, anything else the line-by-line one."""
        nl = text.find("\n")
        head, chain = (text[:nl], text[nl + 1 :]) if nl >= 0 else (text, "")
        m = _HEADER.match(head) if head[:1] not in ("#", "\t", " ", "") else None
        if m is None or self.skip or self.stack or self.pname is not None:
            for raw in text.split("\n"):
                self.line(raw)
            self.end()
            return
        self.header(head, m)
        if self.skip:
            self.end()
            return
        key = (chain, self.pname == "java")
        folded = self.chains.get(key, False)
        if folded is False:
            if len(self.chains) > MAX_CHAINS:
                self.chains.clear()
                self.lines.clear()
                self.lines_java.clear()
            folded = self.chains[key] = self._chain(chain)
        if folded is None:  # not all frame lines: the line-by-line path counts what it finds
            for raw in chain.split("\n"):
                self.line(raw)
            self.end()
            return
        self.out.stacks[f"{self.pname};{folded}" if folded else self.pname] += self.period
        self.out.samples += 1
        self.pname, self.period = None, 1

    def _chain(self, chain: str) -> str | None:
        """Indented frame lines -> "root;...;leaf" ("" for none); None when a line is not one."""
        frames: list[str] = []
        known = self.lines_java if self.pname == "java" else self.lines
        for raw in chain.split("\n") if chain else ():
            leaf_first = known.get(raw)
            if leaf_first is None:
                f = _FRAME.match(raw) if raw[:1] in ("\t", " ") else None
                if f is None:
                    return None
                leaf_first = known[raw] = self.frames(f)[::-1]
            frames += leaf_first
        frames.reverse()
        return ";".join(frames)


def fold_lines(lines: Iterable[str], options: FoldOptions | None = None) -> Folded:
    """Fold ``perf script`` lines (see the module docstring)."""
    folder = _Folder(options)
    step = folder.line
    for raw in lines:
        step(raw)
    # perf script ends every sample with a blank line; like stackcollapse-perf.pl, a
    # truncated last sample without one is not counted
    return folder.out


CHUNK = 1 << 22  # characters of text folded at once


def fold_stream(stream: TextIO, options: FoldOptions | None = None) -> Folded:
    """Fold ``perf script`` text read from ``stream`` (a file, a pipe) in large chunks,
    sample by sample: the same result as ``fold_lines``, several times faster."""
    folder = _Folder(options)
    rest = ""
    while True:
        block = stream.read(CHUNK)
        if not block:
            break
        text = rest + block
        cut = text.rfind("\n\n")
        if cut < 0:
            rest = text
            continue
        rest = text[cut + 2 :]
        for sample in text[:cut].split("\n\n"):
            sample = sample.lstrip("\n")  # more blank lines in a row end nothing more
            if sample:
                folder.sample(sample)
    for raw in rest.splitlines(keepends=True):  # a last sample with no blank line is not counted
        folder.line(raw)
    return folder.out


def fold_text(text: str, options: FoldOptions | None = None) -> Folded:
    """Fold ``perf script`` text held in memory (``fold_stream``)."""
    import io

    return fold_stream(io.StringIO(text), options)


def fold_file(path: str | Path, options: FoldOptions | None = None) -> Folded:
    with open(path, errors="replace") as f:
        return fold_stream(f, options)


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
