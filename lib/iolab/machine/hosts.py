"""The hosts of a client/server run: fio's own distributed engine, reached and checked.

A host is a running ``fio --server``, named ``address[:port]`` (port 8765, fio's default;
IPv6 as ``[addr]:port``); two servers on one address but different ports are different
hosts. A hosts file (YAML) says, per host, the command prefix that reaches it for
everything that is not fio I/O — ``via: ssh -tt user@host`` or ``via: ip netns exec NS``::

    10.0.0.2:
      via: ssh -tt root@10.0.0.2
    10.0.0.3:8766: {via: [ip, netns, exec, rack2]}

The file is checked by ``HostsFile`` (pydantic, messages by ``iolab.core.schema``): each
key an address[:port], each entry ``{via: ...}`` or the prefix alone, as text (split as a
shell would) or a list of words.

With a prefix, iolab checks that host's fio version, takes its system snapshot (a
``python3 -`` there reading /sys and /proc with ``iolab.core.system``'s own code, so the host
needs python3, not iolab) and can start and stop its server. Without one, only the
connection is checked, and a host that is this machine is reached directly.

``check_hosts`` says, before any run starts, every host that cannot be reached, refuses
the connection or runs another fio version, each by its name. ``local_servers(n)`` starts
``n`` fio servers on this machine — each in a network namespace joined by a veth pair when
root may make them, else on loopback ports — and stops them (by pid) and removes the
namespaces when it ends, also after a crash (``iolab.machine.ledger``, ``iolab.runs.repair``).
"""

from __future__ import annotations

import ast
import json
import os
import re
import secrets
import shlex
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, RootModel, Strict, model_validator

from ..core import system
from ..core.errors import HostError, InputError
from ..core.paths import safe_name
from ..core.runfiles import quote
from ..core.schema import refusal, validated
from ..core.validate import yaml_mapping
from . import ledger
from .process import spawn, stop_group

DEFAULT_PORT = 8765  # fio's FIO_NET_PORT (server.h)
CONNECT_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class Host:
    """One fio server: ``name`` as the user wrote it (the table's ``host`` column); two
    hosts are the same when their address and port are."""

    name: str = field(compare=False)
    address: str
    port: int = DEFAULT_PORT
    via: tuple[str, ...] = field(default=(), compare=False)

    @property
    def ipv6(self) -> bool:
        return ":" in self.address

    @property
    def fio_line(self) -> str:
        """This host as a line of fio's ``--client=FILE`` host list: ``addr,port``."""
        return f"{'ip6:' if self.ipv6 else ''}{self.address},{self.port}"

    @property
    def folder(self) -> str:
        """A folder name for this host's files in a run folder (``hosts/<folder>``): the name
        with each character other than ASCII letters, digits and ``. _ = -`` as ``_``
        (``iolab.core.paths.safe_name``: never ``..`` or a slash)."""
        return safe_name(self.name, fill="_", fallback="host", per_char=True)

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as run on this host: behind its prefix."""
        return [*self.via, *argv]

    @property
    def reachable_for_commands(self) -> bool:
        """Whether commands other than fio I/O can run there: a prefix, or this machine."""
        return bool(self.via) or is_this_machine(self.address)


# ---------------------------------------------------------------- naming
# a DNS name or IPv4 address (RFC 1123 letters, digits, - and .; _ as some resolvers allow),
# or an IPv6 address with an optional %zone
_ADDRESS = re.compile(r"[A-Za-z0-9_.-]{1,253}|[0-9A-Fa-f:.]{2,45}(%[A-Za-z0-9_.-]{1,32})?")


def parse_host(text: str, via: Sequence[str] = ()) -> Host:
    """``address[:port]`` -> Host; InputError saying the accepted spellings otherwise."""
    name = str(text).strip()
    address, port = name, DEFAULT_PORT
    shown = quote(name, 60)
    if name.startswith("["):
        address, bracket, rest = name[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise InputError(f"host {shown}: write an IPv6 host as [address]:port, e.g. [::1]:8765")
        port = rest[1:] or DEFAULT_PORT
    elif name.count(":") == 1:
        address, port = name.split(":")
    if not _ADDRESS.fullmatch(address) or ".." in address or address.startswith(("-", ".")):
        raise InputError(
            f"host {shown} is not address[:port] (e.g. 10.0.0.2, h1:8766, [::1]:8765): "
            "an address is a host name, IPv4 or [IPv6] address of at most 253 characters; "
            "separate hosts with commas"
        )
    try:
        port = int(port)
    except ValueError:
        raise InputError(f"host {shown}: port {quote(str(port), 20)} is not a number") from None
    if not 0 < port < 65536:
        raise InputError(f"host {shown}: port {str(port)[:20]} is outside 1-65535")
    return Host(name, address, port, tuple(via))


def hosts_from(spec: str | Sequence[str] | None, hosts_file: str | os.PathLike | None = None) -> list[Host]:
    """The hosts of ``spec`` ("h1,h2:8766" or a list), with their prefixes from ``hosts_file``;
    every host of the file when ``spec`` is empty. InputError for a bad name, a host named
    twice or a file entry that is not ``{via: ...}``."""
    vias = read_hosts_file(hosts_file) if hosts_file else {}
    names = [s for s in (spec.split(",") if isinstance(spec, str) else spec or [])]
    names = [str(n).strip() for n in names if str(n).strip()] or list(vias)
    if not names:
        raise InputError(
            "no hosts given: name them as address[:port], comma-separated "
            "(--hosts 10.0.0.2,10.0.0.3:8766), or give a hosts file"
        )
    hosts = []
    for name in names:
        plain = parse_host(name)
        via = next((v for k, v in vias.items() if parse_host(k) == plain), ())
        hosts.append(Host(plain.name, plain.address, plain.port, tuple(via)))
    twice = sorted({h.name for h in hosts if hosts.count(h) > 1})
    if twice:
        raise InputError(
            f"host {', '.join(twice)} is named twice (the same address and port); name each fio server once"
        )
    return hosts


# ---------------------------------------------------------------- the hosts file
def _words(via: Any) -> Any:
    """A command prefix as words: text split as a shell would (``ssh -tt root@h``), or a list
    whose numbers are words too; anything else is left for the type check to refuse."""
    if isinstance(via, str):
        try:
            via = shlex.split(via)
        except ValueError as exc:  # an unclosed quote
            raise ValueError(f"cannot be split into words ({exc}): close the quote") from None
    if isinstance(via, list):
        via = [str(w) if isinstance(w, (int, float)) and not isinstance(w, bool) else w for w in via]
        if not via:
            raise ValueError("holds no command")
    return via


def _address(name: str) -> str:
    parse_host(name)  # InputError: the spellings of address[:port]
    return name


Prefix = Annotated[list[Annotated[str, Strict()]], BeforeValidator(_words)]
HostName = Annotated[str, AfterValidator(refusal(_address))]  # address[:port]


class HostEntry(BaseModel):
    """What reaches one host: ``{via: prefix}``, or the prefix alone (``h1: ssh -tt root@h1``)."""

    model_config = ConfigDict(
        extra="forbid",
        title="a host entry {via: command prefix}",
        json_schema_extra={"examples": ["{via: ssh -tt root@10.0.0.2}"]},
    )
    via: Prefix = Field(
        description="a command prefix that reaches the host (text, or a list of words)",
        examples=["ssh -tt root@10.0.0.2"],
    )

    @model_validator(mode="before")
    @classmethod
    def _prefix_alone(cls, entry: Any) -> Any:
        return {"via": entry} if isinstance(entry, (str, list)) else entry


class HostsFile(RootModel[dict[HostName, HostEntry]]):
    """A hosts file (module docstring): address[:port] -> its entry."""

    root: dict[HostName, HostEntry] = Field(title="host")  # messages say "host h1: via ..."

    @model_validator(mode="after")
    @refusal
    def _each_server_once(self) -> HostsFile:
        seen: dict[Host, str] = {}
        for name in self.root:
            host = parse_host(name)
            if host in seen:
                raise InputError(
                    f"host {seen[host]} and host {name} are the same fio server (address and port); keep one entry"
                )
            seen[host] = name
        return self


def read_hosts_file(path: str | os.PathLike) -> dict[str, list[str]]:
    """{host name: command prefix} from a hosts file (see the module docstring), checked by
    ``HostsFile``: InputError naming the file, the host and what to write."""
    doc = yaml_mapping(path, "hosts file (YAML: host -> {via: command prefix})", ["<host>"])
    return {name: entry.via for name, entry in validated(HostsFile, doc, str(path)).root.items()}


def is_this_machine(address: str) -> bool:
    """Whether ``address`` belongs to this machine (a socket can be bound to it)."""
    try:
        infos = socket.getaddrinfo(address, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):  # UnicodeError: a name IDNA cannot encode (a label over 63)
        return False
    for family, _, _, _, addr in infos:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            try:
                s.bind((addr[0], 0))
                return True
            except OSError:
                continue
    return False


# ---------------------------------------------------------------- checks before a run
def run_on(host: Host, argv: Sequence[str], stdin: str | None = None, timeout_s: float = 20) -> str:
    """``argv`` run on ``host`` (behind its prefix), its stdout; HostError with what it said."""
    cmd = host.command(argv)
    try:
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HostError(f"host {host.name}: {shlex.join(cmd)} failed: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no message)"]
        raise HostError(f"host {host.name}: {shlex.join(cmd)} exited {done.returncode}: {said[0]}")
    return done.stdout


def connect_problem(host: Host, timeout_s: float = CONNECT_TIMEOUT_S) -> str:
    """Why ``host``'s fio server cannot be reached, or "" when it accepts a connection."""
    try:
        with socket.create_connection((host.address, host.port), timeout=timeout_s):
            return ""
    except ConnectionRefusedError:
        return (
            f"refused the connection on port {host.port}: no fio server listens there; start one "
            f"(fio --server={host.fio_line}) or let iolab start it (a `via:` prefix in a hosts file, and --start-servers)"
        )
    except TimeoutError:
        return f"did not answer within {timeout_s:g} s on port {host.port}: check the address and any firewall"
    except OSError as exc:
        return f"cannot be reached ({exc.strerror or exc}): check the address"
    except UnicodeError:  # IDNA: a label of the name is empty or over 63 characters
        return "is not a name the resolver can look up (a part between dots is over 63 characters): check the address"


def check_hosts(hosts: Sequence[Host], fio_version: str) -> dict[str, str]:
    """{host name: its fio version, or "not checked (...)"}; HostError naming every host that
    cannot be reached, refuses the connection or runs another fio than ``fio_version``."""
    problems, versions = [], {}
    for host in hosts:
        if why := connect_problem(host):
            problems.append(f"{host.name} {why}")
            continue
        if not host.reachable_for_commands:
            versions[host.name] = "not checked (no `via:` prefix for this host in a hosts file)"
            continue
        try:
            theirs = run_on(host, ["fio", "--version"]).strip()
        except HostError as exc:
            problems.append(f"{exc}".removeprefix("host "))
            continue
        versions[host.name] = theirs
        if theirs != fio_version:
            problems.append(
                f"{host.name} runs {theirs}, this machine {fio_version}: fio's client and "
                "servers must be the same version; install the same fio on every host"
            )
    if problems:
        raise HostError("before any run started, these hosts are not ready:\n  " + "\n  ".join(problems))
    return versions


_STAND_ALONE = """import json, sys, types
for _name, _values in {given!r}.items():  # the package and each sibling module: the constants the module imports
    _stand_in = sys.modules[_name] = types.ModuleType(_name)
    _stand_in.__path__ = []
    _stand_in.__dict__.update(_values)
_module = sys.modules[{name!r}] = types.ModuleType({name!r})
_module.__package__ = {package!r}
exec(compile({source!r}, {file!r}, "exec"), _module.__dict__)
print(json.dumps(_module.{call}))
"""


def standalone(module: ModuleType, call: str) -> str:
    """A script for ``python3 -`` on a host without iolab: ``module``'s own source, run as it is,
    then ``call`` (e.g. ``snapshot(None, [0])``), whose value it prints as JSON. The names the
    module imports from sibling modules are given to it beforehand in stand-ins of those
    modules: constants only (a module shipped this way runs nothing else of iolab's), which
    AssertionError says of any other."""
    source = Path(module.__file__).read_text()
    package = module.__package__ or ""
    given: dict[str, dict[str, Any]] = {}
    parts = package.split(".")
    for i in range(len(parts)):
        given[".".join(parts[: i + 1])] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = ".".join(parts[: len(parts) - node.level + 1])
        name = f"{base}.{node.module}" if node.module else base
        for alias in node.names:
            value = getattr(module, alias.asname or alias.name)
            if not isinstance(value, (str, int, float, bool, type(None))):
                raise AssertionError(f"{module.__name__} cannot run alone: it imports {alias.name}, not a constant")
            given.setdefault(name, {})[alias.name] = value
    return _STAND_ALONE.format(
        given=given, name=module.__name__, package=package, source=source, file=module.__file__, call=call
    )


def snapshot_on(host: Host, device: str | None = None, cpus: list[int] | None = None) -> dict[str, Any]:
    """``iolab.core.system.snapshot`` taken on ``host``: its own code sent to ``python3 -`` there
    (the host needs python3, not iolab); {"absent": why} when it cannot be taken."""
    if not host.reachable_for_commands:
        return {"absent": f"no command reaches {host.name} (give it `via:` in a hosts file)"}
    script = standalone(system, f"snapshot({device!r}, {cpus!r})")
    try:
        return json.loads(run_on(host, ["python3", "-"], stdin=script, timeout_s=60))
    except (HostError, ValueError) as exc:
        return {"absent": f"snapshot of {host.name} failed: {exc}"}


# ---------------------------------------------------------------- servers
@dataclass
class Server:
    """A ``fio --server`` iolab started: stopped by its pid."""

    host: Host
    proc: subprocess.Popen
    entry: ledger.Entry

    def stop(self) -> None:
        if self.proc.returncode is None:
            stop_group(self.proc, grace_s=3)
        self.entry.release()


def start_server(host: Host, wait_s: float = 10) -> Server:
    """Start ``fio --server`` on ``host`` behind its prefix; returns once it accepts
    connections. HostError when it exits or does not listen within ``wait_s``."""
    if not host.reachable_for_commands:
        raise HostError(
            f"host {host.name}: no command reaches it to start fio --server; give it "
            "`via:` in a hosts file, or start the server there yourself"
        )
    bind = f"{'ip6:' if host.ipv6 else 'ip:'}{host.address},{host.port}"
    proc, entry = spawn(
        host.command(["fio", f"--server={bind}"]),
        name=f"fio server {host.name}",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = Server(host, proc, entry)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            said = (proc.stderr.read() or "").strip()
            server.stop()
            raise HostError(f"host {host.name}: fio --server exited {proc.returncode}: {said or '(no message)'}")
        if not connect_problem(host, timeout_s=0.5):
            return server
        time.sleep(0.05)
    server.stop()
    raise HostError(f"host {host.name}: fio --server did not listen on port {host.port} within {wait_s:g} s")


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


class LocalServers:
    """``n`` fio servers on this machine (see ``local_servers``); ``hosts`` names them."""

    def __init__(self) -> None:
        self.servers: list[Server] = []
        self.namespaces: list[tuple[str, ledger.Entry]] = []
        self.kind = ""

    @property
    def hosts(self) -> list[Host]:
        return [s.host for s in self.servers]

    def stop(self, which: Host | None = None) -> None:
        """Stop every server (or ``which``) by its pid; remove the namespaces once all stopped."""
        for server in [s for s in self.servers if which is None or s.host == which]:
            server.stop()
        if which is None:
            for name, entry in self.namespaces:
                delete_netns(name)
                entry.release()
            self.namespaces.clear()

    def __enter__(self) -> LocalServers:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def netns_allowed() -> bool:
    """Whether this process may make network namespaces (root, with ``ip``)."""
    import shutil

    return os.geteuid() == 0 and shutil.which("ip") is not None


def delete_netns(name: str) -> None:
    """Remove a namespace iolab made (its veth pair goes with it)."""
    subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)


def _make_netns(index: int, tag: str, octet: int) -> tuple[str, Host, ledger.Entry]:
    """A namespace joined to this one by a veth pair, 10.<octet>.<index>.1 here and .2 there."""
    name = f"iolab-{tag}-{index}"
    outside, inside = f"il{tag}o{index}", f"il{tag}i{index}"
    entry = ledger.record("netns", name=name, undo=lambda: delete_netns(name))
    here, there = f"10.{octet}.{index}.1", f"10.{octet}.{index}.2"
    inns = ["ip", "netns", "exec", name]
    for argv in (
        ["ip", "netns", "add", name],
        ["ip", "link", "add", outside, "type", "veth", "peer", "name", inside],
        ["ip", "link", "set", inside, "netns", name],
        ["ip", "addr", "add", f"{here}/30", "dev", outside],
        ["ip", "link", "set", outside, "up"],
        [*inns, "ip", "addr", "add", f"{there}/30", "dev", inside],
        [*inns, "ip", "link", "set", inside, "up"],
        [*inns, "ip", "link", "set", "lo", "up"],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            subprocess.run(["ip", "link", "delete", outside], capture_output=True, check=False)
            delete_netns(name)
            entry.release()
            raise HostError(f"could not make network namespace {name}: {shlex.join(argv)}: {done.stderr.strip()}")
    return name, Host(there, there, DEFAULT_PORT, tuple(inns)), entry


def _unused_octet() -> int:
    """A second octet of 10.x.0.0/16 no address of this machine uses."""
    used = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=False).stdout
    for _ in range(100):
        octet = 100 + secrets.randbelow(150)
        if f" 10.{octet}." not in used:
            return octet
    raise HostError("no free 10.x.0.0/16 range for local fio servers' namespaces")


@contextmanager
def local_servers(n: int, netns: bool | None = None) -> Iterator[LocalServers]:
    """``n`` fio servers on this machine, stopped by pid (namespaces removed) on exit.

    ``netns``: each in its own network namespace joined by a veth pair (needs root and
    ``ip``; the default when allowed), else (False) on free loopback ports of 127.0.0.1.
    The servers share this machine's files and CPUs: a study of how fio's client/server
    mode behaves, not of separate machines."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise InputError(f"local servers: {n!r} is not a number of servers >= 1")
    use_netns = netns_allowed() if netns is None else netns
    if use_netns and not netns_allowed():
        raise HostError("network namespaces need root and iproute2's `ip`; use netns=False (loopback ports)")
    servers = LocalServers()
    servers.kind = "network namespaces (veth pairs)" if use_netns else "loopback ports"
    try:
        tag, octet = f"{os.getpid() % 100000}", _unused_octet() if use_netns else 0
        for i in range(n):
            if use_netns:
                name, host, entry = _make_netns(i, tag, octet)
                servers.namespaces.append((name, entry))
            else:
                port = free_port()
                host = Host(f"127.0.0.1:{port}", "127.0.0.1", port)
            servers.servers.append(start_server(host))
        yield servers
    finally:
        servers.stop()


def start_local_servers(n: int, netns: bool | None = None) -> LocalServers:
    """``local_servers`` for a notebook: started now, stopped by ``.stop()`` (or at exit,
    or by the next iolab command after a crash)."""
    manager = local_servers(n, netns)
    servers = manager.__enter__()
    servers._manager = manager  # keeps the generator (and its finally) alive until stop()
    return servers


def describe(hosts: Sequence[Host]) -> str:
    """E.g. "2 hosts: 10.1.0.2, 10.1.1.2"."""
    return f"{len(hosts)} host{'s' if len(hosts) != 1 else ''}: {', '.join(h.name for h in hosts)}"
