"""The generation panel as a request: what Generate, Reroll and live audition (app.live) ask the
worker for. Reading only; no behaviour of a control."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.adapters.state import panel_adapters
from app.common.tiers import chosen
from engines.errors import StudioError
from engines.request import GenerationRequest

if TYPE_CHECKING:
    import numpy as np

    from app.common.session import TakeModel
    from app.generate.panel import GenerationPanel

SEED_RANGE = 2**32


def read_seed(panel: GenerationPanel) -> int | None:
    """The seed typed in the panel; None when the field is empty (a random one)."""
    text = panel.seed_edit.text().strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise StudioError(f"The seed '{text}' is not a whole number; type one from 0 to "
                          f"{SEED_RANGE - 1} or clear the field.") from None
    if not 0 <= value < SEED_RANGE:
        raise StudioError(f"The seed {value} is out of range; choose one from 0 to "
                          f"{SEED_RANGE - 1}.")
    return value


def panel_request(panel: GenerationPanel, session: TakeModel, seed: int,
                  init_audio: np.ndarray | None = None) -> GenerationRequest:
    """The panel as a request with `seed`; the session's init take (and its inpaint spans) makes
    it audio-to-audio or inpainting. `init_audio` (float) may be passed in so variations share
    one conversion of the init take."""
    w = panel
    init_take = session.init_take
    kwargs = dict(
        prompt=w.prompt_edit.toPlainText(), negative_prompt=w.negative_edit.text(),
        model=w.model_combo.currentData() or "demo", decoder=w.decoder_combo.currentData(),
        precision=chosen(w.precision_combo), codec_tier=chosen(w.codec_tier_combo),
        seconds=w.seconds_spin.value(),
        steps=w.steps_spin.value(), seed=seed, cfg=w.cfg_spin.value(),
        apg=w.apg_spin.value(), adapters=panel_adapters(w.adapters_panel))
    if init_take is not None:
        kwargs["init_audio"] = init_audio if init_audio is not None \
            else init_take.float_audio()
        if session.spans:
            kwargs["inpaint_spans"] = list(session.spans)
        else:
            kwargs["init_noise_level"] = w.init_noise_slider.value() / 100
    return GenerationRequest(**kwargs)
