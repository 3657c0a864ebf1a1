"""The adapter refusals users meet, each one sentence with its remedy (engines.errors.Advice).

An AdapterError is bad input (a RequestError): the command line exits with 2, the window names
the Adapters panel. Remedy keys: `lora` (a file: pick another adapter; a setting: load fewer or
lower-rank adapters) and `lora_strength` (lower the strengths); each front end words them.
"""

from __future__ import annotations

from engines.errors import Advice, BackendError, Remedy, RequestError

ADAPTER_KEY = "lora"
STRENGTH_KEY = "lora_strength"


class AdapterError(RequestError):
    """An adapter file cannot be used with this model: unreadable, a variant the branch does not
    serve, too much stacked rank, or operands that would make the model produce garbage."""


def pick_another(sentence: str) -> AdapterError:
    """`sentence` (what happened) followed by the remedy 'pick another adapter file'."""
    text = sentence.replace("{", "{{").replace("}", "}}")
    return AdapterError(Advice(text + "; pick another adapter file ({0}).",
                               Remedy.file(ADAPTER_KEY)))


def fewer_adapters(sentence: str) -> AdapterError:
    text = sentence.replace("{", "{{").replace("}", "}}")
    return AdapterError(Advice(text + "; load fewer or lower-rank adapters ({0}).",
                               Remedy.setting(ADAPTER_KEY)))


def lower_strengths(sentence: str) -> AdapterError:
    text = sentence.replace("{", "{{").replace("}", "}}")
    return AdapterError(Advice(text + "; lower the adapters' strengths ({0}) or drop the one "
                                      "furthest from its base ({1}).",
                               Remedy.setting(STRENGTH_KEY), Remedy.setting(ADAPTER_KEY)))


def nonfinite_latents_error() -> BackendError:
    """What a take with adapters says when the model's latents came back NaN or Inf: the
    adapters pushed the model out of range (the official runtime's guard, same advice)."""
    return BackendError(Advice(
        "The adapters made the model produce invalid values (NaN or Inf), so no audio was "
        "written; lower their strengths ({0}) or generate without them ({1}) to check the model.",
        Remedy.setting(STRENGTH_KEY), Remedy.setting(ADAPTER_KEY)))
