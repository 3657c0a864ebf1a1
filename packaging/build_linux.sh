#!/usr/bin/env bash
# Builds the Linux one-folder bundle and its .tar.gz:
#   dist/sa3-studio/sa3-studio                       the executable (no arguments: the window)
#   dist/sa3-studio-<version>-linux-<arch>.tar.gz    what users download
# then renders a demo take with the bundled executable, in a data folder of its own, to prove
# the demo works out of the box (the demo model set is built from the bundled recipes on first
# use).
#
# Steps: a build venv (build/bundle/venv, made afresh), the wheel built from this tree with
# `python -m build`, that wheel and PyInstaller installed into the venv, PyInstaller run on
# packaging/sa3_studio.spec. The bundle so holds exactly what the wheel holds.
#
#   packaging/build_linux.sh            # PYTHON=python3.12 to build with another Python
# Needs: Python 3.11+ with venv, network access to PyPI (or a pip mirror), about 1.5 GB of disk.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
WORK="build/bundle"
DIST="dist"
step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }

version="$("$PYTHON" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"
arch="$(uname -m)"

step "build venv"
rm -rf "$WORK"
"$PYTHON" -m venv "$WORK/venv"
venv_python="$WORK/venv/bin/python"
"$venv_python" -m pip install -q --upgrade pip
"$venv_python" -m pip install -q build

step "wheel"
# sdist first, then the wheel from it: a stale build/lib in this tree cannot slip in
"$venv_python" -m build --outdir "$WORK/wheel" .
wheel="$(ls "$WORK"/wheel/sa3_studio-*.whl)"
"$venv_python" -m pip install -q "$wheel[bundle]"

step "PyInstaller"
rm -rf "$DIST/sa3-studio"
"$venv_python" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$DIST" --workpath "$WORK/pyinstaller" packaging/sa3_studio.spec

step "tar.gz"
archive="$DIST/sa3-studio-$version-linux-$arch.tar.gz"
tar -C "$DIST" -czf "$archive" sa3-studio

step "demo take from the bundle"
check="$(mktemp -d)"
trap 'rm -rf "$check"' EXIT
SA3_STUDIO_HOME="$check/home" "$DIST/sa3-studio/sa3-studio" generate \
    --prompt "coin pickup, bright" --seconds 1 --seed 7 --out "$check/demo.wav"
[ -s "$check/demo.wav" ] || { echo "FAILED: the bundle wrote no demo take" >&2; exit 1; }

du -sh "$DIST/sa3-studio" "$archive"
echo "built $archive"
