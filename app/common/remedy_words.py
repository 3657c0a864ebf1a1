"""The window's words for remedies (engines.errors.Remedy): a setting is the control's label
and where it is, a value is the entry to choose in that control, a command is the button that
does the same, and an environment variable what can be done in the window instead
(app.common.environment_words). Everything the window shows from the engines passes through
`for_window`.

Where the user is matters: in the Models window a remedy names "Advanced options", not the
menu path to the window the user is already in.
"""

from __future__ import annotations

from app.common.environment_words import without_environment
from engines.catalog import MODEL_SETS
from engines.errors import COMMAND, VALUE, Remedy, worded

MAIN, MODELS = "main", "models"  # where the sentence is shown
MODELS_WINDOW = "Models > Manage models..."
ADVANCED = "Advanced options"

# setting key -> (the control's label, the place it is in: None for the main window's form,
# ADVANCED for the Models window's advanced options, else a place named in words).
CONTROLS: dict[str, tuple[str, str | None]] = {
    "backend": ("Backend", ADVANCED),  # the window picks its runtime itself: files decide
    "decoder": ("Decoder", None), "precision": ("Precision", None),
    "codec_tier": ("Codec tier", None), "model": ("Model", None),
    "cfg": ("CFG", None), "apg": ("APG", None), "steps": ("Steps", None),
    "seconds": ("Length", None), "seed": ("Seed", None), "variations": ("Variations", None),
    "negative_prompt": ("Negative prompt", None), "prompt": ("Prompt", None),
    "init_audio": ("init audio", "File > Open init audio..."),
    "inpaint": ("painted spans", "the waveform"),
    "loop_method": ("the loop method", "the Finish panel"),
    "name_template": ("the name template", "the Finish panel"),
    "trim_db": ("Trim's dBFS threshold", "the Finish panel"),
    "jobs": ("jobs", None),
    # adapters: a file is added or removed in the panel itself, a strength on its row
    "lora": ("the Adapters panel", None),
    "lora_strength": ("the strength sliders in the Adapters panel", None),
    "team_connection": ("the connection line", "Settings > Team library..."),
}
# Team library commands: run on the team's server, or the window's own place for them.
TEAM_COMMANDS = {"team init": "the team init command on the team's server",
                 "team list": "the Team source of the Library tab",
                 "team reembed": "the team reembed command (any designer who may publish)"}
# Whole remedies a label alone would not say.
PHRASES = {"loop_method": "make it by crossfade (choose Crossfade beside Make loop in the "
                          "Finish panel)"}
# value words: setting key -> {value: the entry's text}
ENTRIES: dict[str, dict[str, str]] = {
    "backend": {"tensorrt": "TensorRT engines", "onnxruntime": "ONNX graphs"},
    "decoder": {"same-s": "SAME-S", "same-l": "SAME-L", "demo": "Demo codec"},
    "model": {key: model_set.label for key, model_set in MODEL_SETS.items()},
}


# Where a take is made, in the main window's plain words (the runtimes' names are the Models
# window's and the Advanced group's).
RUNS_ON = {"tensorrt": "the graphics card", "onnxruntime": "the processor"}


def for_window(text: object, here: str = MAIN) -> str:
    """`text` (a sentence or an error) with its remedies in the window's words, for a
    sentence shown `here` (MAIN or MODELS). Never raises: it runs on the way to the status
    bar, often inside an error handler."""
    try:
        return without_environment(worded(text, lambda remedy: window_words(remedy, here)))
    except Exception:  # noqa: BLE001 - a sentence in plain words beats no sentence
        return str(text)


def window_words(remedy: Remedy, here: str = MAIN) -> str:
    """One remedy as the window says it, shown `here`."""
    if remedy.kind == COMMAND:
        return _command(remedy, here)
    if remedy.kind != VALUE and remedy.key in PHRASES:
        return PHRASES[remedy.key]
    label, place = CONTROLS.get(remedy.key, (remedy.key.replace("_", " "), None))
    where = _where(place, here)
    if remedy.kind == VALUE:
        entries = ENTRIES.get(remedy.key, {})
        shown = " or ".join(entries.get(v, v) for v in remedy.values)
        return f"{shown} in {label}{where}"
    return f"{label}{where}"  # a setting, or a file chosen where the setting is


def _where(place: str | None, here: str) -> str:
    """ " (where the control is)", or "" when it is in the form the user sees."""
    if place is None:
        return " (in the main window)" if here == MODELS else ""
    if place == ADVANCED:
        return f" (under {_advanced(here)})"
    return f" ({place})"


def _advanced(here: str) -> str:
    return ADVANCED if here == MODELS else f"{ADVANCED} in {MODELS_WINDOW}"


def _command(remedy: Remedy, here: str) -> str:
    """A command -> the button that does the same, and where it is."""
    advanced = _advanced(here)
    sets = [MODEL_SETS[v].label if v in MODEL_SETS else "the text encoder" if v == "t5gemma"
            else None for v in remedy.values]
    named = ", ".join(s for s in sets if s)
    if remedy.key == "models download":
        kind = "ONNX graphs" if remedy.backend == "onnxruntime" else "TensorRT engines"
        what = f"{named}, {kind}" if named else kind
        return f"Download under {advanced} ({what})"
    if remedy.key == "models build":
        return f"Build engines under {advanced}" + (f" ({named})" if named else "")
    if remedy.key == "models token":
        return f"Store token under {advanced}"
    if remedy.key in TEAM_COMMANDS:
        return TEAM_COMMANDS[remedy.key]
    if remedy.key == "ucs import":  # engines.delivery.labels.IMPORT_UCS_LIST
        return "Import UCS list... in Settings > Labels and UCS list..."
    if remedy.key == "demo once":
        where = " in the main window" if here == MODELS else ""
        return f"Generate{where} with {MODEL_SETS['demo'].label} chosen in Model"
    return "the Models window" if here != MODELS else advanced
