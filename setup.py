"""The wheel carries the kit beside the library: the notebooks, the seed manifests, the example
specs and the reference figures go into ``iolab/kit/`` at build time (``iolab init DIR`` makes a
workspace of them). Everything else is in pyproject.toml."""

import json
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
KIT = {  # folder in iolab/kit <- files of the checkout
    "notebooks": "notebooks/*.ipynb",
    "data/seeds": "data/seeds/*.yaml",
    "data/examples": "data/examples/*",
    "data/reference": "data/reference/*",
}


class BuildWithKit(build_py):
    def run(self):
        super().run()
        for folder, pattern in KIT.items():
            out = Path(self.build_lib) / "iolab" / "kit" / folder
            out.mkdir(parents=True, exist_ok=True)
            for f in sorted(HERE.glob(pattern)):
                if f.is_file():
                    shutil.copyfile(f, out / f.name)
        built = _commit()
        if built:  # provenance of a wheel built from a git checkout (iolab.record.provenance.checkout)
            (Path(self.build_lib) / "iolab" / "kit" / "build.json").write_text(json.dumps(built) + "\n")


def _commit():
    """The commit the wheel is built from, and whether the checkout had changes; None outside git."""
    try:
        git = ["git", "-C", str(HERE), "-c", "filter.nbstripout.clean=cat"]
        commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10)
        status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


setup(cmdclass={"build_py": BuildWithKit})
