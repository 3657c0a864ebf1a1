"""Which packages the wheel holds; everything else is in pyproject.toml.

Here rather than in pyproject.toml because pyproject's `packages.find` cannot also map a
folder to another package name: resources/ (demo recipe data, theme, icons, desktop entry)
ships as the package `sa3_studio_resources`, a name no other distribution will take, so that
importlib.resources finds the files in a wheel and in a PyInstaller bundle
(engines.paths.resources_dir). A clone that is not installed reads resources/ in place.
"""

from setuptools import find_packages, setup

RESOURCE_FOLDERS = ("demo", "desktop", "icons", "theme")

setup(
    packages=[*find_packages(include=["app", "app.*", "engines", "engines.*"]),
              "sa3_studio_resources",
              # its data folders as namespace packages, so setuptools treats them as data
              *(f"sa3_studio_resources.{folder}" for folder in RESOURCE_FOLDERS)],
    package_dir={"sa3_studio_resources": "resources"},
)
