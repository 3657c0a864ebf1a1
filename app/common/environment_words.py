"""Environment variables in an engine sentence, in the window's words (app.common.remedy_words
applies this to everything it words). The command line's user sets HF_ENDPOINT or
SA3_STUDIO_HOME where the command runs; the window's user has no such place, so the window
names what can be done where they are: check the network connection, store the token again,
copy the library to a writable folder. A variable no phrase below covers is
still never shown by name.
"""

from __future__ import annotations

import re

# (pattern, words) in order: the longer phrases first, then each variable alone.
PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), words) for pattern, words in (
        (r"check the network (?:or|and) HF_ENDPOINT", "check the network connection"),
        (r"check HF_ENDPOINT points at a Hugging Face hub",
         "check the network connection (the model server did not answer like a Hugging Face "
         "hub)"),
        (r"check HF_ENDPOINT and the connection", "check the network connection"),
        (r"check the token and HF_ENDPOINT", "check the token"),
        (r"check HF_ENDPOINT and try again later", "try again later"),
        (r"check HF_ENDPOINT", "check the network connection"),
        (r" or HF_TOKEN\)", ")"),
        (r"give (?:it|the token) in the HF_TOKEN environment variable instead",
         "try again once the system keyring works"),
        (r"\s*\(HF_HUB_OFFLINE(?: is set)?\)", " (SA3 Studio was started offline)"),
        (r"unset HF_HUB_OFFLINE and run", "start SA3 Studio again online and run"),
        (r"unset it to download models", "start SA3 Studio again online to download models"),
        (r"(?:,\s*|\s+)or (?:point|set) SA3_STUDIO_HOME (?:there|at one|to a folder on a larger "
         r"disk)", ""),
        (r"(?:set|point) \$?SA3_STUDIO_HOME (?:to|at) (a folder[^,;.]*)",
         r"start SA3 Studio with \1 as its data folder"),
        (r"\$?\b(?:HF_ENDPOINT|HF_TOKEN|HUGGING_FACE_HUB_TOKEN|HF_HUB_OFFLINE|"
         r"TRANSFORMERS_OFFLINE|SA3_STUDIO_[A-Z_]+|CUDA_VISIBLE_DEVICES)\b",
         "a setting SA3 Studio was started with"),
    ))


def without_environment(text: str) -> str:
    """`text` with every environment variable it names put in the window's words."""
    for pattern, words in PHRASES:
        text = pattern.sub(words, text)
    return text
