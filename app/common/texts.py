"""Sentences shown both by the window's layout and by the controllers that update it."""

from __future__ import annotations

STRENGTH_HELP = ("Strength: how far the result may move away from the init audio (low keeps "
                 "it, high follows the prompt).")
NEGATIVE_OFF_HELP = "The negative prompt only has an effect with cfg above 1."
NO_INIT = "None: drop a file on the waveform or use File > Open."
LIST_RUNNING = ("A sound list is rendering; wait for it to finish or press Cancel beside its "
                "progress bar.")
