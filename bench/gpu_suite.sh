#!/usr/bin/env bash
# On the GPU machine: the whole test suite (junit), then the TensorRT benchmark, results into
# bench/results/ and $OUT. Carry .whl and .qt made by bench/device_bundle.sh, after a first
# call that carried .whl-scipy alone and ran `mkdir -p /tmp/sa3-wheels && cp .whl-scipy/*.whl
# /tmp/sa3-wheels/` (a carried path is removed by the next call; /tmp stays while it is warm).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
day=$(date +%Y%m%d)
out=${OUT:-bench/results}
tar -C /tmp -xJf .qt/qt.tar.xz
[ -f .qt/fonts.tar.xz ] && tar -C /tmp -xJf .qt/fonts.tar.xz
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl $(ls .whl-scipy/*.whl /tmp/sa3-wheels/*.whl 2>/dev/null)
export PYTHONPATH=/tmp/site LD_LIBRARY_PATH=/tmp/syslib:${LD_LIBRARY_PATH:-} \
    QT_QPA_PLATFORM=offscreen ALSA_CONFIG_PATH=/tmp/alsa/alsa.conf PYTHONUNBUFFERED=1 \
    FONTCONFIG_FILE=/tmp/fonts/fonts.conf
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
# 12 workers (pytest-xdist, carried in .whl): one process no longer fits a 10-minute call (a
# gpu test that counts the device's free memory can see another worker's GPU use). A
# worker cannot report a test whose id holds non-UTF-8 bytes, so that one runs alone after.
nu=tests/engines/test_library.py::test_library_in_a_folder_whose_name_is_not_utf8
python3 -m pytest -q -p no:cacheprovider -n 12 -rfEs --deselect "$nu" \
    --junitxml="$out/gpu-$day-junit.xml" 2>&1 | tee "$out/gpu-$day-tests.log" | tail -25
python3 -m pytest -q -p no:cacheprovider -rfEs "$nu" 2>&1 | tee -a "$out/gpu-$day-tests.log" \
    | tail -3
python3 bench/bench_tensorrt.py --junit "$out/gpu-$day-junit.xml" --out "$out/gpu-$day.json" \
    2>&1 | tee "$out/gpu-$day.log"
python3 bench/bench_tier_switch.py --out "$out/tier-switch-$day.json" \
    2>&1 | tee "$out/tier-switch-$day.log"
# Adapters (issue 35): writes adapters-$day.json and, beside it, the log of the same run.
python3 bench/bench_adapters.py --out "$out/adapters-$day.json"
