"""Engine sentences reworded for the window.

The engines write for the command line ("use --backend tensorrt", "download it with `python
main.py models download medium`"), and the command line needs those flags. The window has
controls instead, so everything it shows from the engines passes through `for_window`, which
names the control to use. Any flag it does not know still loses its dashes: a user of the
window has nowhere to type one.
"""

from __future__ import annotations

import re

from engines.catalog import BACKEND_LABELS, DECODERS, MODEL_SETS, TIERS
from engines.catalog_tables import BACKEND_ALIASES, PRECISION_ALIASES

MODELS_WINDOW = "Models > Manage models..."
ADVANCED = f"Advanced options in {MODELS_WINDOW}"

# Flags that name a choice in a combo box: flag -> the control's label.
# The window picks its backend itself; the one Backend control is the Models window's.
CHOICE_CONTROLS = {"backend": f"Backend (under {ADVANCED})", "decoder": "Decoder",
                   "precision": "Precision", "model": "Model", "tier": "Codec tier",
                   "codec-tier": "Codec tier"}
# Flags that name some other control or place: flag -> what the window calls it.
PLACES = {
    "onnx": "ONNX graphs",
    "init-audio": "init audio (File > Open init audio...)",
    "cfg": "CFG", "apg": "APG", "steps": "Steps", "seconds": "Length", "seed": "Seed",
    "variations": "Variations", "prompt": "Prompt", "negative-prompt": "Negative prompt",
    "negative": "Negative prompt", "inpaint": "painted spans on the waveform",
    "arch": "graphics card architecture", "list-models": "the Models window",
}
_DECODER_WORDS = {"same-s": "SAME-S", "same-l": "SAME-L", "demo": "Demo codec"}
_BACKEND_WORDS = {**BACKEND_LABELS, "trt": "TensorRT", "ort": "ONNX Runtime",
                  "onnx": "ONNX Runtime", "auto": "Automatic"}

_VERB = r"(?:(?:choose|use|pass|set|select|with)\s+)?"
# a value: not the "or" of a list, and not the full stop that ends the sentence
_VALUE = r"(?!(?:or|and)\b)[A-Za-z0-9](?:[\w:-]|\.(?=\w))*"
# the second value of "fp16 or fp32" is a name the catalog knows (not the "the" of "or the demo")
_KNOWN = "|".join(sorted({*BACKEND_ALIASES, *DECODERS, *PRECISION_ALIASES, *MODEL_SETS, *TIERS},
                         key=len, reverse=True))
_CHOICE = re.compile(
    _VERB + r"--(backend|decoder|precision|model|codec-tier|tier)"
    + rf"(?:[ =]({_VALUE}(?:(?:,\s*|\s+or\s+)(?:{_KNOWN})(?![\w-]))*))?", re.IGNORECASE)
_LEAVE_UNSET = re.compile(r"leave\s+--([a-z][\w-]*)\s+unset", re.IGNORECASE)
_INIT_AUDIO = re.compile(r"(?:pass\s+)?--init-audio(?:\s+FILE)?", re.IGNORECASE)
_ANY_FLAG = re.compile(r"(?<![\w-])--([A-Za-z][\w-]*)")
_COMMAND = re.compile(r"(?:\b(?:with|using|run)\s+)?`(python main\.py [^`]*)`")
_BARE_TOKEN_COMMAND = re.compile(r"python main\.py models token")
_QUOTED = re.compile(r"`([^`]+)`")


def for_window(text: object) -> str:
    """`text` with every command-line flag and command replaced by the window's own words.
    Never raises: it runs on the way to the status bar, often inside an error handler."""
    try:
        sentence = str(text)
        sentence = _COMMAND.sub(_command, sentence)
        sentence = _BARE_TOKEN_COMMAND.sub(f"the Hugging Face token under {ADVANCED}", sentence)
        sentence = _QUOTED.sub(r'"\1"', sentence)  # backticks mark code on a terminal only
        sentence = _LEAVE_UNSET.sub(lambda m: f"leave {_control(m.group(1))} at its default",
                                    sentence)
        sentence = _INIT_AUDIO.sub("open init audio with File > Open init audio...", sentence)
        sentence = _CHOICE.sub(_choice, sentence)
        return _ANY_FLAG.sub(lambda m: PLACES.get(m.group(1).lower(),
                                                  m.group(1).replace("-", " ")), sentence)
    except Exception:  # noqa: BLE001 - a sentence with a flag beats no sentence
        return str(text)


def _control(flag: str) -> str:
    flag = flag.lower()
    return CHOICE_CONTROLS.get(flag) or PLACES.get(flag) or flag.replace("-", " ")


def _choice(match: re.Match) -> str:
    flag, values = match.group(1).lower(), match.group(2)
    control = CHOICE_CONTROLS[flag]
    if not values:
        return control
    words = re.split(r"(,\s*|\s+or\s+)", values)
    shown = "".join(part if i % 2 else _value_word(flag, part) for i, part in enumerate(words))
    return f"choose {shown} in {control}"


def _value_word(flag: str, value: str) -> str:
    key = value.lower()
    if flag == "backend":
        return _BACKEND_WORDS.get(key, value)
    if flag == "decoder":
        return _DECODER_WORDS.get(key, value.upper())
    if flag == "model" and key in MODEL_SETS:
        return MODEL_SETS[key].label
    return value


def _command(match: re.Match) -> str:
    """A `python main.py ...` command -> where the window does the same."""
    words = match.group(1).split()[2:]
    sub = " ".join(words[:2])
    args = [w for w in words[2:] if not w.startswith("--")]
    if sub == "models download":
        named = ", ".join(_set_word(a) for a in args if a in MODEL_SETS or a == "t5gemma")
        kind = " as ONNX graphs" if "--onnx" in words else ""
        what = f" ({named}{kind})" if named else ""
        return f"in {MODELS_WINDOW}{what}"
    if sub == "models build":
        return f"with Build engines ({ADVANCED})"
    if sub == "models token":
        return f"with the Hugging Face token under {ADVANCED}"
    if words[:1] == ["generate"]:
        return "with Generate, the Demo model chosen in Model" if "demo" in words else \
            "with Generate"
    return f"in {MODELS_WINDOW}" if words[:1] == ["models"] else "from the command line"


def _set_word(key: str) -> str:
    return "the text encoder" if key == "t5gemma" else MODEL_SETS[key].label
