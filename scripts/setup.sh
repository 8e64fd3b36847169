#!/usr/bin/env bash
# Install what iolab needs and is missing; quick when everything is there.
#   system tools: fio, perf (Debian: linux-perf), stress-ng, iproute2, python3-venv  (apt-get, as root)
#   .venv with iolab and its Python dependencies (uv from PyPI, else pip; editable)
#   the python3 Jupyter kernel inside .venv (papermill uses it)
#   --dev:     also the test and lint tools (the [dev] extra: pytest, playwright, ruff; make test, make lint)
#   --browser: also Debian's chromium, for the browser tests (make test; not make demo/lab)
#   --nvmelab: also the NVMe lab's QEMU, Debian's kernel, busybox-static and nvme-cli, and the
#              [nvmelab] extra (make test, make nvmelab; about 90 MB to download, 500 MB installed)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
browser=0 nvmelab=0 dev=0
for arg in "$@"; do
    case "$arg" in
        --browser) browser=1 ;;
        --nvmelab) nvmelab=1 ;;
        --dev) dev=1 ;;
        *) echo "setup: unknown option '$arg'; use: bash scripts/setup.sh [--dev] [--browser] [--nvmelab]" >&2; exit 2 ;;
    esac
done

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "setup: iolab needs Python 3.11 or newer; $PYTHON is $("$PYTHON" -V 2>&1 || echo missing)." \
        "Install a newer one (Ubuntu 22.04: apt-get install python3.11 python3.11-venv) and run PYTHON=python3.11 make setup" >&2
    exit 1
fi

# tools missing -> their packages on this distribution (one table: lib/iolab/core/distro.py)
packages_of() { "$PYTHON" lib/iolab/core/distro.py "$@"; }
tools=()
for tool in fio perf stress-ng losetup blkid setpriv mkfs.ext4 ip; do
    command -v "$tool" >/dev/null 2>&1 || tools+=("$tool")
done
if [ ! -x .venv/bin/python ] && ! "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    tools+=(venv)
fi
if [ $browser -eq 1 ] && ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        tools+=(chromium)
    else
        echo "setup: chromium is missing, so the browser tests will be skipped; install it as root: apt-get install $(packages_of chromium)" >&2
    fi
fi
labtools=()
if [ $nvmelab -eq 1 ]; then
    command -v qemu-system-x86_64 >/dev/null 2>&1 || labtools+=(qemu-system-x86_64)
    [ -x /bin/busybox ] || command -v busybox >/dev/null 2>&1 || labtools+=(busybox)
    command -v nvme >/dev/null 2>&1 || labtools+=(nvme)
    ls /boot/vmlinuz-* >/dev/null 2>&1 || labtools+=(kernel)
fi
missing=() lab=()
[ ${#tools[@]} -gt 0 ] && read -r -a missing <<< "$(packages_of "${tools[@]}")"
[ ${#labtools[@]} -gt 0 ] && read -r -a lab <<< "$(packages_of "${labtools[@]}")"
if [ ${#lab[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing the NVMe lab: ${lab[*]} (about 90 MB to download)"
        apt-get update -qq
        # without recommends: the guest needs the kernel image, not firmware or QEMU's extras
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${lab[@]}" >/dev/null
    else
        echo "setup: the NVMe lab needs ${lab[*]}; its tests will be skipped. As root: apt-get install ${lab[*]}" >&2
    fi
fi
if [ ${#missing[@]} -gt 0 ]; then
    pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing $pkgs"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null
    else
        echo "setup: missing $pkgs" >&2
        echo "setup: install them as root: apt-get install $pkgs   (conda users: see environment.yml)" >&2
        exit 1
    fi
fi

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$PYTHON" -m venv .venv
fi
# the extras this command needs; .venv/.installed names those installed (one a line)
wanted=(lab)  # JupyterLab: make lab, and the browser tests
[ $dev -eq 1 ] && wanted+=(dev)
[ $nvmelab -eq 1 ] && wanted+=(nvmelab)
have=$(cat .venv/.installed 2>/dev/null || true)
for extra in $have; do  # never uninstall what an earlier command installed
    case " ${wanted[*]} " in *" $extra "*) ;; *) [ "$extra" = base ] || wanted+=("$extra") ;; esac
done
stale=0
[ ! -f .venv/.installed ] || [ pyproject.toml -nt .venv/.installed ] && stale=1
for extra in "${wanted[@]}"; do
    grep -qx "$extra" .venv/.installed 2>/dev/null || stale=1
done
if [ $stale -eq 1 ]; then
    spec=.
    [ ${#wanted[@]} -gt 0 ] && spec=".[$(IFS=,; echo "${wanted[*]}")]"
    echo "setup: installing Python dependencies into .venv ($spec)"
    # uv (a PyPI package) installs the same requirements in seconds where pip takes half a
    # minute; pip does it when uv cannot be had or fails (IOLAB_PIP=1 asks for pip). Bytecode
    # is compiled now, as pip does: else the first kernel of `make demo` compiles pandas and
    # Jupyter, and the NVMe lab's guest (a read-only view of .venv) compiles them at every start
    if [ -z "${IOLAB_PIP:-}" ] && .venv/bin/python -m pip install -q uv >/dev/null 2>&1 \
            && .venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python -e "$spec"; then
        :
    else
        .venv/bin/python -m pip install -q --upgrade pip
        .venv/bin/python -m pip install -q -e "$spec"
    fi
    printf '%s\n' base "${wanted[@]}" > .venv/.installed
fi
if [ -n "$(find lib/iolab -name '*.py' -newer .venv/.compiled 2>/dev/null | head -1)" ] || [ ! -f .venv/.compiled ]; then
    # bytecode written now: commands such as `iolab fold` start fast even where it cannot be written later
    .venv/bin/python -m compileall -q lib/iolab >/dev/null && touch .venv/.compiled
fi
# notebooks are committed without outputs by a git filter (.gitattributes names it), not by hand
# (nbstripout comes with the dev extra: make setup-dev, make test)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && [ -z "$(git config --local filter.nbstripout.clean)" ] \
        && .venv/bin/python -c "import nbstripout" 2>/dev/null; then
    git config --local filter.nbstripout.clean "\"$PWD/.venv/bin/python\" -m nbstripout --keep-id"
    git config --local filter.nbstripout.smudge cat
    git config --local diff.ipynb.textconv "\"$PWD/.venv/bin/python\" -m nbstripout -t --keep-id"
fi
# the notebooks' kernel, named for the project (iolab.report.kernel.KERNEL_NAME): this venv's Python
if ! grep -qs '"Python 3 (iolab)"' .venv/share/jupyter/kernels/iolab/kernel.json; then
    .venv/bin/python -m ipykernel install --sys-prefix --name iolab --display-name "Python 3 (iolab)" >/dev/null
fi
