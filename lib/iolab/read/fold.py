"""``perf script`` text -> folded stacks, the plain-text format FlameGraph's tools share.

Input (``perf script``; any ``-F`` subset that keeps comm, tid and the call chain)::

    fio 4242 [000] 1234.5678:   1001001 cpu-clock:
            ffffffff81a0 io_submit_sqes ([kernel.kallsyms])
                  55d3c0 td_io_queue (/usr/bin/fio)

Output, one line per distinct stack, root first, then its weight::

    fio;td_io_queue;io_submit_sqes 1001001

Same output as ``stackcollapse-perf.pl`` (brendangregg/FlameGraph) for the same input and
options — checked on that project's own test inputs and expected results:

* weights are the sample periods when perf prints them (a period of 0 counts 1), else 1
  per sample;
* only events of the first event type are kept (mixing cycles and instructions misleads),
  unless ``event_filter`` names one;
* the process name (spaces as ``_``) is the root frame; ``pid``/``tid`` append ``-PID`` or
  ``-PID/TID`` (``?`` when perf printed only the tid, or a tid of 0: Perl's falsy ``"0"``);
* ``[unknown]`` frames take their module's name when known (``addrs`` keeps the address);
  inlined frames (``a->b``) are split, the inner ones marked ``_[i]``; ``kernel``/``jit``
  mark kernel and JIT frames ``_[k]``/``_[j]``; ``+0x..`` offsets and argument lists are cut;
  in a process whose name (with ``pid``/``tid`` appended) starts with ``java``, the ``L`` of
  a Java class name is cut.

Speed: the text is read as bytes in large blocks and cut into samples at blank lines; a
sample whose header is plain ASCII and whose call chain was seen before costs one regex on its
header and one dict look-up of its chain's bytes (a profile repeats the same chains; only the
headers differ); each distinct chain is decoded and folded once. Anything unusual takes
``stackcollapse-perf.pl``'s rules line by line (``fold_lines``), which the fast path must
equal (tests/test_fold.py).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from pathlib import Path

TYPE_CHECKING = False  # typing is not imported at run time: `iolab fold` must start fast
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import BinaryIO, TextIO

_HEADER = re.compile(r"^(\S.+?)\s+(\d+)/*(\d+)*\s+")
_EVENT = re.compile(r":\s*(\d+)*\s+(\S+):\s*$")
_FRAME = re.compile(r"^\s*(\w+)\s*(.+) \((.*)\)")  # stackcollapse-perf.pl's, as of 2024
_OFFSET = re.compile(r"\+0x[\da-f]+$")
# the header regexes on ASCII bytes, matching exactly as the str ones do (str's \s also takes \x1c-\x1f)
_HEADER_B = re.compile(rb"^([^\s\x1c-\x1f].+?)[\s\x1c-\x1f]+([0-9]+)/*([0-9]+)*[\s\x1c-\x1f]+")
_EVENT_B = re.compile(rb":[\s\x1c-\x1f]*([0-9]+)*[\s\x1c-\x1f]+([^\s\x1c-\x1f]+):[\s\x1c-\x1f]*$")
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
    if pname.startswith("java") and "/" in func:  # stackcollapse-perf.pl: $pname =~ m/^java/
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
MAX_CHAIN_BYTES = 256 << 20  # ... or beyond this many bytes of their text


def _process_name(comm: str, first_id: str, second_id: str | None, opts: FoldOptions) -> str:
    """A sample's root frame: its process name, ``-PID`` or ``-PID/TID`` appended as asked
    (``?`` for the pid when perf printed only the tid), spaces as ``_``. A second id of
    ``0`` (the idle task's ``swapper 0/0``) counts as none: Perl's ``not $tid`` is true for it."""
    pid, tid = (first_id, second_id) if second_id and second_id != "0" else ("?", first_id)
    pname = f"{comm}-{pid}/{tid}" if opts.tid else f"{comm}-{pid}" if opts.pid else comm
    return pname.replace(" ", "_")


class _Folder:
    """The folding state machine of ``stackcollapse-perf.pl``, one line at a time
    (``line``), plus a fast path for whole samples as bytes (``samples``) that folds each
    distinct call chain once: a profile repeats the same chains, only the header lines differ."""

    def __init__(self, options: FoldOptions | None):
        self.opts = options or FoldOptions()
        self.out = Folded(event=self.opts.event_filter)
        self.stack: list[str] = []
        self.pname: str | None = None
        self.period, self.skip = 1, False
        # the same (function, module) pairs recur in almost every sample: tidy each once
        self.frames_of: dict[tuple, list[str]] = {}
        self.lines: dict[bytes, tuple[str, ...]] = {}  # a frame line -> its frames, root first
        self.lines_java: dict[bytes, tuple[str, ...]] = {}  # the same in a java process (tidied otherwise)
        # the fast path (``samples``): a call chain's bytes -> "root;...;leaf" (None: not all
        # frame lines), in a java process apart; a header's process part -> (name, its chains)
        self.chains: dict[bytes, str | None] = {}
        self.chains_java: dict[bytes, str | None] = {}
        self.names: dict[bytes, tuple[str, dict]] = {}
        self.totals: dict[tuple[str, str], int] = {}  # (process name, folded chain) -> weight
        self.chain_bytes = 0  # of the chains' text held in ``chains`` and ``chains_java``
        self.event_b = self.out.event.encode()
        self.errors = "replace"  # how bytes that are not UTF-8 are decoded

    @property
    def java(self) -> bool:
        """Whether the current process's frames are tidied as Java's (its name starts with java)."""
        return self.pname is not None and self.pname.startswith("java")

    def frames(self, f: re.Match) -> list[str]:
        """A frame line's function(s), innermost first, tidied (cached)."""
        pc, rawfunc, mod = f.groups()
        key = (rawfunc, mod, self.java, pc if self.opts.addrs else None)
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
        self.pname = _process_name(m.group(1), m.group(2), m.group(3), self.opts)
        ev = _EVENT.search(line)
        if ev:
            event = ev.group(2)
            if not self.out.event:
                self.out.event = event
            elif event != self.out.event:
                self.out.skipped_other_events += 1
                self.skip = True
                return
            self.period = int(ev.group(1)) if ev.group(1) and ev.group(1) != "0" else 1  # Perl: not $period

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

    def samples(self, pieces: list[bytes]) -> None:
        """Whole samples as bytes, each without the blank line that ends it, as ``line`` on
        each of their lines then on a blank line would: a plain ASCII header line then frame
        lines seen before cost one regex and one dict look-up; anything else is decoded and
        goes line by line. The weights gather in ``totals`` (``finish`` adds them up)."""
        out, header, event_at = self.out, _HEADER_B.match, _EVENT_B.search
        names, totals, want, n = self.names, self.totals, self.event_b, 0
        for s in pieces:
            if not s or s[0] == 10:
                s = s.lstrip(b"\n")  # more blank lines in a row end nothing more
                if not s:
                    continue
            head, _, chain = s.partition(b"\n")
            m = header(head) if s[0] != 35 and head.isascii() else None  # 35: "#", a comment
            if m is None:
                self._slow(s)
                continue
            key = m.group(0)
            name = names.get(key)
            if name is None:
                pname = _process_name(*(g and g.decode() for g in m.groups()), self.opts)
                name = names[key] = (pname, self.chains_java if pname.startswith("java") else self.chains)
            period = 1
            ev = event_at(head)
            if ev is not None:
                digits, event = ev.groups()
                if event != want:
                    if not out.event:
                        out.event = event.decode()
                    if out.event != event.decode():
                        out.skipped_other_events += 1
                        continue
                    want = self.event_b = event
                if digits and digits != b"0":
                    period = int(digits)
            folded = name[1].get(chain, False)
            if folded is False:
                folded = self._new_chain(chain, name)
            if folded is None:  # not all frame lines: the line-by-line path counts what it finds
                self._slow(s)
                continue
            stack = (name[0], folded)
            totals[stack] = totals.get(stack, 0) + period
            n += 1
        out.samples += n

    def _new_chain(self, chain: bytes, name: tuple[str, dict]) -> str | None:
        self.chain_bytes += len(chain)
        if len(self.chains) + len(self.chains_java) > MAX_CHAINS or self.chain_bytes > MAX_CHAIN_BYTES:
            self.chain_bytes = len(chain)
            self.chains.clear()
            self.chains_java.clear()
            self.lines.clear()
            self.lines_java.clear()
        self.pname = name[0]  # frames are tidied by their process's name
        folded = name[1][chain] = self._chain(chain)
        self.pname = None
        return folded

    def _slow(self, sample: bytes) -> None:
        for raw in sample.decode("utf-8", self.errors).split("\n"):
            self.line(raw)
        self.end()

    def finish(self) -> Folded:
        """The fast path's weights added to the stacks; the result."""
        stacks = self.out.stacks
        for (pname, folded), weight in self.totals.items():
            stacks[f"{pname};{folded}" if folded else pname] += weight
        self.totals.clear()
        return self.out

    def _chain(self, chain: bytes) -> str | None:
        """Frame lines -> "root;...;leaf" ("" for none); None when a line is not one."""
        if not chain:
            return ""
        known = self.lines_java if self.java else self.lines
        lines = chain.split(b"\n")
        frames = list(map(known.get, lines))  # each line's frames, root first
        if None in frames:
            for i, line in enumerate(lines):
                if frames[i] is None:
                    raw = line.decode("utf-8", self.errors)
                    f = _FRAME.match(raw) if raw[:1] in ("\t", " ") else None
                    if f is None:
                        return None
                    frames[i] = known[line] = tuple(self.frames(f))
        return ";".join(itertools.chain.from_iterable(reversed(frames)))


def fold_lines(lines: Iterable[str], options: FoldOptions | None = None) -> Folded:
    """Fold ``perf script`` lines (see the module docstring)."""
    folder = _Folder(options)
    step = folder.line
    for raw in lines:
        step(raw)
    # perf script ends every sample with a blank line; like stackcollapse-perf.pl, a
    # truncated last sample without one is not counted
    return folder.out


CHUNK = 1 << 22  # bytes read at once from a file


class FoldParts:
    """``perf script`` text that arrives as consecutive parts at once (one ``perf script`` per
    time range, run side by side), each part in blocks cut anywhere: folded as the blocks
    arrive, with the result of folding the parts joined in order.

        parts = FoldParts(2, options)
        parts.feed(1, block)     # any part, any time, each part's blocks in order
        parts.end(0)             # a part's text is whole
        folded = parts.result()  # once every part has ended

    Samples are counted in any order except where order matters: until the first event is
    known (the one kept: see the module docstring), only the earliest unfinished part is
    folded and the others' blocks wait; a later part's text up to its first blank line is
    folded with the end of the part before it, the sample the two may share.
    ``newlines``: read ``\\r\\n`` and ``\\r`` as ``\\n``, as Python's text files do."""

    def __init__(self, parts: int, options: FoldOptions | None = None, errors: str = "replace", newlines: bool = True):
        self.folder = _Folder(options)
        self.folder.errors = errors  # how bytes that are not UTF-8 are decoded
        self.newlines = newlines
        self.current = 0  # the parts before it are folded, joined to it in order
        self.held: list[list[bytes]] = [[] for _ in range(parts)]  # a part's text since its last blank line
        self.head: list[bytes | None] = [None] * parts  # a later part's text to its first blank line, once seen
        self.waiting: list[list[bytes]] = [[] for _ in range(parts)]  # a later part's, the event unknown
        self.ended = [False] * parts
        self.cr = [False] * parts  # whether the part's last block ended in a CR

    def feed(self, part: int, block: bytes) -> None:
        if self.newlines:
            if self.cr[part] and block[:1] == b"\n":
                block = block[1:]
            self.cr[part] = block[-1:] == b"\r"
            if b"\r" in block:
                block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if part == self.current:
            self._push(part, block)
        elif not self.folder.out.event:
            self.waiting[part].append(block)
        else:
            for waited in self.waiting[part]:
                self._ahead(part, waited)
            self.waiting[part].clear()
            self._ahead(part, block)

    def end(self, part: int) -> None:
        self.ended[part] = True
        while self.ended[self.current] and self.current + 1 < len(self.ended):
            rest = b"".join(self.held[self.current])
            self.held[self.current] = []
            self.current += 1
            c = self.current
            if self.head[c] is not None:  # it went ahead: its first sample may begin in ``rest``
                pieces = (rest + self.head[c]).split(b"\n\n")
                pieces.pop()  # "" or "\n": nothing that the part's next sample would not strip
                self.folder.samples(pieces)
            else:
                blocks, self.held[c] = [*self.held[c], *self.waiting[c]], [rest]
                self.waiting[c] = []
                for block in blocks:
                    self._push(c, block)

    def result(self) -> Folded:
        """The folded stacks, once every part has ended."""
        if not all(self.ended):
            raise ValueError("FoldParts.result() before every part ended")
        self.folder.finish()
        # perf script ends every sample with a blank line; like stackcollapse-perf.pl, a
        # truncated last sample without one is not counted
        for raw in b"".join(self.held[-1]).decode("utf-8", self.folder.errors).splitlines(keepends=True):
            self.folder.line(raw)
        return self.folder.out

    def _push(self, part: int, block: bytes) -> None:
        """``block`` after the part's held text: the samples it completes folded."""
        held = self.held[part]
        if b"\n\n" not in block and not (held and held[-1][-1:] == b"\n" and block[:1] == b"\n"):
            held.append(block)
            return
        held.append(block)
        pieces = b"".join(held).split(b"\n\n")
        self.held[part] = [pieces.pop()]
        self.folder.samples(pieces)

    def _ahead(self, part: int, block: bytes) -> None:
        """A later part's block while the parts before it are still coming (the event known)."""
        if self.head[part] is not None:
            self._push(part, block)
            return
        held = self.held[part]
        if b"\n\n" not in block and not (held and held[-1][-1:] == b"\n" and block[:1] == b"\n"):
            held.append(block)
            return
        head, _, rest = (b"".join(held) + block).partition(b"\n\n")
        self.head[part], self.held[part] = head + b"\n\n", []
        self._push(part, rest)


def fold_blocks(
    blocks: Iterable[bytes], options: FoldOptions | None = None, errors: str = "replace", newlines: bool = True
) -> Folded:
    """Fold ``perf script`` text given as bytes in blocks of any size (cut anywhere): the same
    result as ``fold_lines`` on its decoded lines (``FoldParts``, one part)."""
    parts = FoldParts(1, options, errors, newlines)
    for block in blocks:
        parts.feed(0, block)
    parts.end(0)
    return parts.result()


def fold_stream(stream: TextIO | BinaryIO, options: FoldOptions | None = None) -> Folded:
    """Fold ``perf script`` text read from ``stream`` (a text or binary file, a pipe) in
    large blocks, sample by sample: the same result as ``fold_lines``, several times faster.
    A binary stream's newlines are read as a text file's are."""
    first = stream.read(CHUNK)
    if isinstance(first, str):
        texts = itertools.chain((first,), iter(lambda: stream.read(CHUNK), ""))
        # str -> UTF-8 and back, surrogates included: the text comes out as it went in
        return fold_blocks((t.encode("utf-8", "surrogatepass") for t in texts), options, "surrogatepass", False)
    return fold_blocks(itertools.chain((first,), iter(lambda: stream.read(CHUNK), b"")), options)


def fold_file(path: str | Path, options: FoldOptions | None = None) -> Folded:
    """Fold a ``perf script`` text file (read as bytes; not UTF-8 is replaced, as ``open``
    with ``errors="replace"`` would)."""
    with open(path, "rb") as f:
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


_THREAD_IDS = re.compile(r"-(?:\d+|\?)/(\d+)$")  # the root's -PID/TID that FoldOptions(tid=True) appends


def by_threads(folded: Folded, tids: set[int]) -> tuple[Folded, Folded]:
    """Stacks folded with ``FoldOptions(tid=True)`` (root ``comm-PID/TID``) as two profiles with
    the process name alone at the root, as folding without ``tid`` gives it: every sample, and
    the samples of the threads ``tids`` (the measured tool's, ``iolab.machine.proctree``)."""
    every, mine = Counter(), Counter()
    for stack, count in folded.stacks.items():
        root, sep, rest = stack.partition(";")
        found = _THREAD_IDS.search(root)
        name = root[: found.start()] if found else root
        key = name + sep + rest
        every[key] += count
        if found and int(found.group(1)) in tids:
            mine[key] += count
    kept = (folded.event, folded.skipped_other_events, folded.unrecognized_lines)
    share = sum(mine.values()) / sum(every.values()) if every else 0.0
    return Folded(every, *kept, folded.samples), Folded(mine, *kept, round(folded.samples * share))
