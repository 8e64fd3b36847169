"""The wheel carries the kit beside the library: the notebooks, the seed manifests, the example
specs and the reference figures go into ``iolab/kit/`` at build time (``iolab init DIR`` makes a
workspace of them). Everything else is in pyproject.toml."""

import shutil
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


setup(cmdclass={"build_py": BuildWithKit})
