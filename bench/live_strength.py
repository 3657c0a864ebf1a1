"""bench_live's adapter part (issue 35): a strength change heard live, from the moment the slider
stops to the first sample of the render at that strength.

The two demo adapters (demo-bright, a LoRA, and demo-dark, a DoRA) are added to the Adapters
panel and live audition plays; then the first adapter's strength slider is dragged again and
again - each gesture a run of slider values 16 ms apart (a mouse moving at 60 Hz) from where it
is to a new place, then still for a moment to listen - alternating with the second adapter's
slider, so both the LoRA path (only the strength row changes) and the DoRA path (its row
rescale too) are measured. For each gesture: from its last value to the first sample heard of
the render at that strength (HeardRender.heard_ms of the render whose request holds it), and
where that time goes. Goal on the 2-core machine (demo, ONNX Runtime): p95 <= 150 ms.

The same gestures on the APG box with no adapter in the panel (the plain graph; at CFG 1 APG
changes nothing the render costs) follow, in the same run: what any knob costs on this machine
at this moment, so the adapters' own share shows.
"""

from __future__ import annotations

import random

import numpy as np

from app.adapters.strength import SLIDER_STEP
from engines.demo.demo_adapters import demo_adapter_path

GOAL_STRENGTH_P95_MS = 150.0
MOVE_S = 0.016  # between two slider values of a drag
LISTEN_S = 0.7  # still after a gesture: the render is heard


def _gesture(slider, target: int, idle) -> None:
    start = slider.value()
    step = 1 if target >= start else -1
    for tick in range(start + step, target + step, step * 2):
        slider.setValue(tick)
        idle(MOVE_S)
    slider.setValue(target)


def measure_strength(window, gestures: int, rng: random.Random, idle, settle, say) -> dict:
    """Add the demo adapters, play live, make `gestures` slider gestures; the figures."""
    studio = window.studio
    studio.adapters_controller.add_files([str(demo_adapter_path("demo-bright.safetensors")),
                                          str(demo_adapter_path("demo-dark.safetensors"))])
    live = studio.live_controller
    while studio.adapters_controller.reading:  # read off the GUI thread
        idle(0.01)
    panel = window.generation_panel
    if not live.live:
        panel.live_toggle.click()
    settle(live)
    sliders = [window.findChild(object, f"adapterStrength_{n}") for n in (0, 1)]
    for slider in sliders:  # warm-up: the branch graph's first runs
        _gesture(slider, 10, idle)
        settle(live)
    rows = []
    for index in range(gestures):
        n = index % 2
        slider = sliders[n]
        target = slider.value()
        while abs(target - slider.value()) < 4:
            target = rng.randint(0, slider.maximum())
        _gesture(slider, target, idle)
        idle(LISTEN_S)
        settle(live)
        wanted = round(target * SLIDER_STEP, 2)
        heard = _heard_at(live, n, wanted)
        if heard is None:
            say(f"  gesture {index}: no render at strength {wanted} was heard")
            continue
        rows.append({"adapter": ("lora", "dora-rows")[n], "strength": wanted,
                     "heard_ms": heard.heard_ms, "render_ms": heard.render_ms,
                     "debounce_ms": (heard.submitted_at - heard.changed_at) * 1e3,
                     "wait_ms": (heard.finished_at - heard.submitted_at) * 1e3
                     - heard.render_ms,
                     "to_gui_ms": (heard.delivered_at - heard.finished_at) * 1e3,
                     "to_sound_ms": (heard.heard_at - heard.delivered_at) * 1e3})
    figures = summarise_strength(rows, gestures, say)
    figures["plain_knob"] = _plain_knob(window, gestures, rng, idle, settle, say)
    return figures


def _plain_knob(window, gestures: int, rng: random.Random, idle, settle, say) -> dict:
    """APG dragged the same way, no adapters: the baseline of the same run."""
    live = window.studio.live_controller
    window.generation_panel.adapters_panel.set_entries([])
    settle(live)
    spin = window.generation_panel.apg_spin
    heard_ms, render_ms = [], []
    for _ in range(gestures):
        start = round(spin.value() * 10)
        target = start
        while abs(target - start) < 3:
            target = rng.randint(0, 10)  # APG 0 to 1 in tenths
        step = 1 if target > start else -1
        for tenth in range(start + step, target + step, step):
            spin.setValue(tenth / 10)
            idle(MOVE_S)
        idle(LISTEN_S)
        settle(live)
        heard = live.history[-1] if live.history else None
        if heard is not None and heard.heard_at is not None and \
                heard.serial == live.current_serial and \
                live.current.result.request.apg == target / 10:
            heard_ms.append(heard.heard_ms)
            render_ms.append(heard.render_ms)
    spin.setValue(1.0)
    settle(live)
    figures = {"gestures": gestures, "heard": len(heard_ms),
               "heard_p50_ms": _p(heard_ms, 50), "heard_p95_ms": _p(heard_ms, 95),
               "render_p50_ms": _p(render_ms, 50), "render_p95_ms": _p(render_ms, 95)}
    say(f"  the same gestures on APG without adapters (plain graph, same run): last change -> "
        f"first sample p50 {figures['heard_p50_ms']:.1f}  p95 {figures['heard_p95_ms']:.1f} "
        f"ms, render p50 {figures['render_p50_ms']:.1f} / p95 {figures['render_p95_ms']:.1f}")
    return figures


def _heard_at(live, n: int, wanted: float):
    """The newest heard render whose request holds adapter `n` at `wanted`."""
    current = live.current
    if current is None or not live.history:
        return None
    strengths = [round(c.effective_strength, 2) for c in current.result.request.adapters]
    heard = live.history[-1]
    if len(strengths) > n and strengths[n] == wanted and heard.serial == live.current_serial \
            and heard.heard_at is not None:
        return heard
    return None


def _p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def summarise_strength(rows: list[dict], gestures: int, say) -> dict:
    figures: dict = {"gestures": gestures, "heard": len(rows), "goal_p95_ms": GOAL_STRENGTH_P95_MS}
    for key in ("heard_ms", "debounce_ms", "wait_ms", "render_ms", "to_gui_ms", "to_sound_ms"):
        values = [r[key] for r in rows]
        figures[f"{key[:-3]}_p50_ms"], figures[f"{key[:-3]}_p95_ms"] = _p(values, 50), \
            _p(values, 95)
    for variant in ("lora", "dora-rows"):
        values = [r["heard_ms"] for r in rows if r["adapter"] == variant]
        figures[f"{variant}_heard_p95_ms"] = _p(values, 95)
    met = figures["heard_p95_ms"] <= GOAL_STRENGTH_P95_MS and len(rows) == gestures
    figures["goal_met"] = met
    figures["renders"] = rows
    say(f"strength change (adapters, demo-bright LoRA + demo-dark DoRA): {gestures} slider "
        f"gestures, {len(rows)} heard at their final strength")
    say(f"  slider stops -> first sample  p50 {figures['heard_p50_ms']:6.1f}  p95 "
        f"{figures['heard_p95_ms']:6.1f} ms (goal <= {GOAL_STRENGTH_P95_MS:.0f}: "
        f"{'met' if met else 'NOT met'}); LoRA p95 {figures['lora_heard_p95_ms']:.1f}, DoRA "
        f"p95 {figures['dora-rows_heard_p95_ms']:.1f}")
    say(f"  where the time goes, p50 / p95 ms: knob debounce {figures['debounce_p50_ms']:.1f} / "
        f"{figures['debounce_p95_ms']:.1f}, waiting for the render in flight "
        f"{figures['wait_p50_ms']:.1f} / {figures['wait_p95_ms']:.1f}, render "
        f"{figures['render_p50_ms']:.1f} / {figures['render_p95_ms']:.1f}, to the GUI thread "
        f"{figures['to_gui_p50_ms']:.1f} / {figures['to_gui_p95_ms']:.1f}, to the first sample "
        f"{figures['to_sound_p50_ms']:.1f} / {figures['to_sound_p95_ms']:.1f}")
    return figures
