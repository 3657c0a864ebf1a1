"""What live audition measures and says: each played render's timeline, from the user's last
change to its first sample heard, and the words of the latency readout."""

from __future__ import annotations

from dataclasses import dataclass

SLOW_WORDS = ("Live is slower than typing here (a take renders in about {ms:.0f} ms): it "
              "renders when you pause; a shorter length or fewer steps keeps up.")


@dataclass(frozen=True)
class HeardRender:
    """One played live render, on the time.perf_counter clock (seconds)."""

    serial: int  # the scheduler's serial of the change
    changed_at: float  # the user's last change (keystroke, knob)
    submitted_at: float  # the debounce ended: the change reached the scheduler
    finished_at: float  # the render was done, on the worker thread
    delivered_at: float  # the GUI thread had it and handed it to the player
    heard_at: float | None  # its first sample went to the device; None without audio output
    render_ms: float

    @property
    def heard_ms(self) -> float | None:
        """From the last change to the first sample heard."""
        return None if self.heard_at is None else (self.heard_at - self.changed_at) * 1e3

    @property
    def since_submit_ms(self) -> float | None:
        """From the end of the debounce to the first sample heard."""
        return None if self.heard_at is None else (self.heard_at - self.submitted_at) * 1e3

    @property
    def ready_ms(self) -> float:
        """From the last change to the render in the window's hands (no audio output)."""
        return (self.delivered_at - self.changed_at) * 1e3


def latency_words(heard: HeardRender) -> str:
    """The readout under the Live switch for the newest played render."""
    if heard.heard_ms is None:
        return (f"Ready {heard.ready_ms:.0f} ms after your change (render "
                f"{heard.render_ms:.0f} ms); no audio output to hear it.")
    return (f"Heard {heard.heard_ms:.0f} ms after your change (render "
            f"{heard.render_ms:.0f} ms).")


def slow_words(render_ms: float) -> str:
    return SLOW_WORDS.format(ms=render_ms)
