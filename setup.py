"""The build's one addition to pyproject.toml: the wheel (and the sdist) carry the native appliance.

The launcher, its helpers, supervisord.conf and rootfs/ stay where the checkout keeps them (``make run``, the
Dockerfile and the tests use them there); the build copies them, laid out as in the checkout, into
``deskpilot/_appliance/``, where ``deskpilot up``, ``deskpilot install`` and the native sandbox find them
(``deskpilot.client.native.appliance_root``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
PACKAGED = Path("deskpilot") / "_appliance"
# what a native appliance needs of the checkout, besides the package itself
APPLIANCE = (
    "supervisord.conf",
    "rootfs",
    "scripts/appliance.sh",
    "scripts/with-x.sh",
    "scripts/with-env.sh",
    "scripts/supervise.py",
    "scripts/install-system.sh",
    "scripts/docker-engine.sh",
)


def appliance_files() -> list[str]:
    """Every file of APPLIANCE, relative to the source tree; a missing one fails the build."""
    files: list[str] = []
    for name in APPLIANCE:
        path = HERE / name
        if not path.exists():
            raise FileNotFoundError(f"{name}: the native appliance needs it in the package (setup.py)")
        found = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        files += [str(p.relative_to(HERE)) for p in found]
    return files


class BuildPy(build_py):
    """Also copy the appliance's files into the built package (modes kept: the scripts stay executable)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs from the checkout itself
        target = Path(self.build_lib) / PACKAGED
        for name in appliance_files():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(HERE / name, target / name)


class SDist(sdist):
    """The sdist carries them too, so a wheel built from it (``python -m build``) has them."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, [*files, *appliance_files()])


setup(cmdclass={"build_py": BuildPy, "sdist": SDist})
