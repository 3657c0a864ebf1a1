"""The command line's words for remedies (engines.errors.Remedy): a setting is its flag, a
value is the flag with the value, a file is the flag with FILE, a command is the command to
type. Every line the CLI prints from the engines passes through `say`."""

from __future__ import annotations

from engines.errors import COMMAND, FILE, SETTING, VALUE, Remedy, worded

# Settings whose flag is not the setting's key with dashes.
FLAGS = {"tier": "--codec-tier", "name_template": "--name"}
# Whole remedies the flag alone would not say.
PHRASES = {(SETTING, "loop_method"): "make it by crossfade (--loop-method crossfade)",
           (FILE, "init_audio"): "--init-audio FILE",
           (SETTING, "inpaint"): "--inpaint START:END",
           (FILE, "lora"): "--lora FILE", (SETTING, "lora_strength"): "--lora FILE:STRENGTH",
           (SETTING, "team_connection"): "SA3_STUDIO_TEAM"}
COMMANDS = {"models download": "python main.py models download",
            "models build": "python main.py models build",
            "models token": "python main.py models token",
            "demo once": "python main.py generate --model demo --prompt test",
            "ucs import": "python main.py library import-ucs FILE"}


def flag(key: str) -> str:
    """The flag that sets `key` ("codec tier" -> "--codec-tier")."""
    return FLAGS.get(key) or "--" + key.replace("_", "-").replace(" ", "-")


def cli_words(remedy: Remedy) -> str:
    """One remedy as the command line says it."""
    phrase = PHRASES.get((remedy.kind, remedy.key))
    if phrase is not None:
        return phrase
    if remedy.kind == VALUE:
        return f"{flag(remedy.key)} {' or '.join(remedy.values)}"
    if remedy.kind == FILE:
        return f"{flag(remedy.key)} FILE"
    if remedy.kind == COMMAND:
        words = [COMMANDS.get(remedy.key, f"python main.py {remedy.key}"), *remedy.values]
        if remedy.backend == "onnxruntime":
            words.append("--onnx")
        return f"`{' '.join(words)}`"
    return flag(remedy.key)


def say(text: object) -> str:
    """An engine sentence as the command line words it (text without remedies as is)."""
    return worded(text, cli_words)
