"""A real game engine imports what we deliver (issues 30 and 31): delivered WAVs (16-, 24-bit
and float, looped and not, stereo and mono, metadata of both length parities) go into one Godot 3
project, the editor imports them headless, and a script reads back what the engine took - the
frame count, rate, channels and loop points - which must equal the sidecar beside each file.
Before issue 30 a looped 16-bit take imported as an empty sample with its loop off.

Needs Debian's `godot3` (3.2) and an X display (xvfb-run when there is none); skipped with the
reason where either is missing. CI installs both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.riff_support import deliver_both_ways, varied_take

pytestmark = pytest.mark.slow

GODOT = shutil.which("godot3")
XVFB_RUN = shutil.which("xvfb-run")
TIMEOUT_S = 240
LOOP_FORWARD = 1  # AudioStreamSample.LOOP_FORWARD

# (format, mono, looped, raw frames, prompt, seed, FX name): both formats the issue names, both
# channel counts, loops and one-shots, odd and even text lengths, odd 24-bit mono audio.
CASES = [
    ("wav16", False, True, 44100, "rain on a tin roof", 7, "Tin Rain"),
    ("wav16", False, True, 44100, "rain on a tin roofs", 17, "Tin Rains"),
    ("wav16", True, False, 30001, "coin pickup, bright", 7, "Coin"),
    ("wav16", False, False, 30000, "coin pickup, brights", 17, "Coins"),
    ("wav24", True, True, 44101, "wind in pines", 7, "Pine Wind"),
    ("wav24", True, False, 30001, "wind in pine", 17, "Pine Winds"),
    ("wav24", False, True, 44100, "engine idle, low", 7, "Idle"),
    ("wav32f", False, True, 44100, "engine idle, lows", 17, "Idles"),
]

PROBE = """extends SceneTree

func _init():
\tfor name in %s:
\t\tvar sample = load("res://" + name)
\t\tvar got = {"file": name, "loaded": sample != null}
\t\tif sample != null:
\t\t\tvar width = 2 if sample.format == AudioStreamSample.FORMAT_16_BITS else 1
\t\t\tvar channels = 2 if sample.stereo else 1
\t\t\tgot["frames"] = sample.get_data().size() / (width * channels)
\t\t\tgot["format"] = sample.format
\t\t\tgot["channels"] = channels
\t\t\tgot["mix_rate"] = sample.mix_rate
\t\t\tgot["loop_mode"] = sample.loop_mode
\t\t\tgot["loop_begin"] = sample.loop_begin
\t\t\tgot["loop_end"] = sample.loop_end
\t\tprint("GODOT_SAMPLE " + to_json(got))
\tquit()
"""


def godot_command(*args: str) -> list[str]:
    command = [GODOT or "godot3", "--no-window", "--audio-driver", "Dummy", *args]
    return command if os.environ.get("DISPLAY") else [XVFB_RUN or "xvfb-run", "-a", *command]


def run_godot(project: Path, *args: str, tries: int = 1) -> str:
    # Godot keeps editor settings and caches under HOME: a throwaway one, not the user's.
    home = project.parent / "godot-home"
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_DATA_HOME": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache")}
    for folder in ("config", "data", "cache"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    for _ in range(tries):
        done = subprocess.run(godot_command("--path", str(project), *args), env=env,
                              capture_output=True, text=True, errors="replace",
                              timeout=TIMEOUT_S)
        if done.returncode == 0:
            break
        # Godot 3.2's editor now and then crashes in a worker thread as it quits (signal 11
        # after the import, about 1 run in 5 on a loaded 2-core machine, whatever the files):
        # run it again - what it imported is kept, a file that crashes the import every time
        # still fails here, and the probe judges what was imported.
    # A file Godot 3 misreads can crash its importer (signal 11), not only import as silence.
    assert done.returncode == 0, (f"godot3 {' '.join(args)} exited with {done.returncode}:\n"
                                  + done.stdout[-3000:] + done.stderr[-3000:])
    return done.stdout


def import_into_godot(project: Path, names: list[str]) -> dict[str, dict]:
    """What Godot 3 made of each file in `project`: one editor import of them all, then one
    script that loads each imported sample."""
    (project / "project.godot").write_text('config_version=4\n\n[application]\n\n'
                                           'config/name="SA3 delivery check"\n')
    (project / "probe.gd").write_text(PROBE % json.dumps(names))
    run_godot(project, "--editor", "--quit", tries=3)
    out = run_godot(project, "-s", "probe.gd", tries=3)
    found = [json.loads(line.split(" ", 1)[1]) for line in out.splitlines()
             if line.startswith("GODOT_SAMPLE ")]
    return {item["file"]: item for item in found}


@pytest.mark.skipif(GODOT is None, reason="godot3 is not installed (Debian: apt-get install "
                                          "godot3), so no game engine can import the files")
@pytest.mark.skipif(not os.environ.get("DISPLAY") and XVFB_RUN is None,
                    reason="Godot 3's editor needs an X display and xvfb-run is not installed "
                           "(Debian: apt-get install xvfb xauth)")
def test_godot_3_imports_every_frame_and_the_loop_points_of_our_wavs(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    sidecars: dict[str, dict] = {}
    for n, (fmt, mono, looped, frames, prompt, seed, fx_name) in enumerate(CASES):
        take = varied_take(fmt, frames=frames, mono=mono, looped=looped, prompt=prompt,
                           seed=seed, fx_name=fx_name)
        # Only the named file goes to Godot: both ways write the same bytes (test_delivery_paths)
        delivered = deliver_both_ways(take, tmp_path / "out", f"case{n}")[0]
        shutil.copyfile(delivered.path, project / delivered.path.name)
        sidecars[delivered.path.name] = delivered.sidecar["output"]

    imported = import_into_godot(project, sorted(sidecars))

    assert sorted(imported) == sorted(sidecars), "Godot did not report every file"
    for name, side in sidecars.items():
        got = imported[name]
        assert got["loaded"], f"Godot could not load {name}"
        loop = side["loop_points"]
        expected = {"frames": side["samples"], "mix_rate": side["sample_rate"],
                    "channels": side["channels"],
                    "loop_mode": LOOP_FORWARD if loop else 0,
                    "loop_begin": loop[0] if loop else 0, "loop_end": loop[1] if loop else 0}
        assert {key: got[key] for key in expected} == expected, name
