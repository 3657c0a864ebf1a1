"""What the command line delivers for a fixed set of demo takes, as one JSON manifest: the bytes
of every file (clock dates and times blanked), every sidecar (timings, clock times and the
temporary folder blanked) and what each command printed (durations blanked).

A refactor that must not change behaviour (issue 33) is checked by running this before and after
and comparing: `python bench/golden_outputs.py --out before.json`, change the code, then
`python bench/golden_outputs.py --compare before.json`. tests/cli/test_golden_outputs.py holds the
code to the manifest kept in tests/fixtures/golden_outputs.json on the machine that recorded it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import soundfile

REPO = Path(__file__).resolve().parents[1]
# A dated clock value inside a file (bext origination date/time, iXML dates) or a printed line
# (`library list` shows the minute, no seconds): blanked, since a kept take carries the time the
# take was made.
CLOCK = re.compile(rb"\d{4}-\d{2}-\d{2}"
                   rb"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[+-]\d{2}:?\d{2}|Z)?)?"
                   rb"|\d{2}[:-]\d{2}[:-]\d{2}")
DURATION = re.compile(r"\d+(?:\.\d+)?\s?(?:ms|s|takes/s|x realtime)(?![\w])")
VOLATILE_KEYS = re.compile(r"time|_ms$|date|created|delivered|wall|elapsed|path|folder|library")

# (name, argv after `main.py`); {out} is the output folder. Loops are made by crossfade: a loop
# by the model regenerates its seam with a new random seed (recorded in the sidecar). Every
# mode of delivery the CLI has:
# formats, rates, mono, loops, finishing presets, labels and name templates, batch, export.
COMMANDS: list[tuple[str, list[str]]] = [
    ("wav16", ["generate", "--prompt", "coin pickup, bright", "--seconds", "1", "--seed", "7",
               "--no-library", "--out", "{out}/coin.wav"]),
    ("wav24-48k-mono-loop", ["generate", "--prompt", "wind ambience loop", "--seconds", "2",
                             "--seed", "3", "--no-library", "--loop", "--loop-method", "crossfade",
                             "--rate", "48000",
                             "--mono", "--format", "wav24", "--out", "{out}/wind.wav"]),
    ("flac-preset", ["generate", "--prompt", "ui click", "--seconds", "0.3", "--seed", "5",
                     "--no-library", "--preset", "UI click", "--out", "{out}/click.flac"]),
    ("ogg-trim", ["generate", "--prompt", "door slam", "--seconds", "2", "--seed", "9",
                  "--no-library", "--trim", "--fade-out", "50", "--out", "{out}/door.ogg"]),
    ("variations-ucs", ["generate", "--prompt", "footstep on gravel", "--seconds", "0.6",
                        "--seed", "100", "--variations", "3", "--no-library",
                        "--category", "FOOTGrvl", "--fx-name", "Gravel Step",
                        "--out", "{out}/FOOTGrvl_Gravel Step_JD_SA3.wav"]),
    ("kept", ["generate", "--prompt", "laser zap", "--seconds", "1", "--seed", "11",
              "--variations", "2", "--out", "{out}/zap.wav"]),
    ("batch", ["batch", "{list}", "--out", "{out}/batch", "--name", "{name}_{n:02}"]),
    ("export", ["library", "export", "1", "2", "--to", "{out}/export",
                "--name", "{category}_{name}_{n:02}", "--format", "wav24"]),
    ("show", ["library", "show", "1"]),
    ("list", ["library", "list"]),
    ("list-models", ["generate", "--list-models"]),
]
SOUND_LIST = ("name,prompt,seconds,variations,seed,preset\n"
              "footstep_gravel,footstep on gravel,0.6,2,100,Game SFX one-shot\n"
              "hum,electric hum loop,1,1,4,\n")


def _blank_json(value: object, root: str) -> object:
    if isinstance(value, dict):
        return {k: ("<volatile>" if VOLATILE_KEYS.search(k) else _blank_json(v, root))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_blank_json(v, root) for v in value]
    return value.replace(root, "<ROOT>") if isinstance(value, str) else value


def _text(text: str, root: str) -> str:
    text = CLOCK.sub(b"<clock>", text.replace(root, "<ROOT>").encode()).decode()
    text = re.sub(r"-[0-9a-f]{6}\.(wav|flac)\b", r"-<id>.\1", text)  # a kept take's file suffix
    return DURATION.sub("<t>", text)


def capture(root: Path) -> dict[str, object]:
    """Run COMMANDS in a new data folder under `root`; what came out of each."""
    out = root / "out"
    out.mkdir()
    listing = root / "sounds.csv"
    listing.write_text(SOUND_LIST, encoding="utf-8")
    env = {**os.environ, "SA3_STUDIO_HOME": str(root / "home"), "PYTHONHASHSEED": "0"}
    results: dict[str, object] = {}
    for name, argv in COMMANDS:
        args = [a.format(out=out, list=listing) if "{out}" in a or "{list}" in a else a
                for a in argv]
        done = subprocess.run([sys.executable, str(REPO / "main.py"), *args], env=env,
                              capture_output=True, text=True, cwd=root, timeout=600)
        results[name] = {"exit": done.returncode, "stdout": _text(done.stdout, str(root)),
                         "stderr": _text(done.stderr, str(root))}
    files: dict[str, object] = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        key = str(path.relative_to(out))
        if path.suffix == ".json":
            files[key] = _blank_json(json.loads(path.read_text(encoding="utf-8")), str(root))
        elif path.suffix == ".ogg":  # Ogg streams get a random serial number: their audio
            files[key] = hashlib.sha256(soundfile.read(path, dtype="float32")[0]).hexdigest()
        else:
            files[key] = hashlib.sha256(CLOCK.sub(b"0", path.read_bytes())).hexdigest()
    return {"machine": machine(), "commands": results, "files": files}


def machine() -> dict[str, str]:
    """What the figures depend on: the demo runs on onnxruntime's CPU kernels, whose float
    results differ between instruction sets and releases."""
    import numpy
    import onnxruntime

    flags = ""
    try:
        cpu = Path("/proc/cpuinfo").read_text(encoding="utf-8")
        flags = " ".join(sorted({f for f in ("avx512f", "avx2", "fma") if f" {f}" in cpu}))
    except OSError:
        pass
    return {"python": platform.python_version(), "machine": platform.machine(),
            "cpu_flags": flags, "onnxruntime": onnxruntime.__version__,
            "numpy": numpy.__version__}


def differences(before: dict, after: dict) -> list[str]:
    """Each place `after` differs from `before`, one line each."""
    found = []
    for part in ("commands", "files"):
        old, new = before[part], after[part]
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                found.append(f"{part}: {key}: {json.dumps(old.get(key))[:300]} -> "
                             f"{json.dumps(new.get(key))[:300]}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the manifest here")
    parser.add_argument("--compare", type=Path, help="compare with this manifest")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sa3-golden-") as folder:
        manifest = capture(Path(folder))
    if args.out:
        args.out.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n",
                            encoding="utf-8")
        print(f"{len(manifest['files'])} files, {len(manifest['commands'])} commands -> "
              f"{args.out}")
    if args.compare:
        found = differences(json.loads(args.compare.read_text(encoding="utf-8")), manifest)
        print("\n".join(found) or "identical")
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
