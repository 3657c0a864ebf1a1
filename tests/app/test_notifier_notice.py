"""A standing notice (no audio output device, found after the first paint) never pushes aside
the sentence the user was just shown - an error, a result - but is shown when the status bar
has been quiet (the sound-device lookup ends at a moment nobody chose)."""

from __future__ import annotations

from app.common import notifier as notifier_module
from app.common.notifier import Notifier


def test_a_notice_waits_behind_a_fresh_sentence_and_shows_when_quiet(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(notifier_module.time, "monotonic", lambda: clock[0])
    notifier = Notifier()
    shown = []
    notifier.shown.connect(lambda text, _ms: shown.append(text))
    notifier.status("The list has no name columns; add a name column.")
    clock[0] += 1.0
    notifier.notice("No audio output device was found; playback is off.")
    assert shown == ["The list has no name columns; add a name column."]
    assert notifier.history[-1].startswith("No audio output device")  # kept, not lost
    clock[0] += notifier_module.NOTICE_QUIET_S
    notifier.notice("No audio output device was found; playback is off.")
    assert shown[-1].startswith("No audio output device")
