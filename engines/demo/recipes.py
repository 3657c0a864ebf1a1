"""The demo text side: a small Unigram tokenizer and the embedding table that drives the demo DiT.

Each vocabulary piece gets a 768-wide embedding whose first dimensions are sound parameters
(see `layout`): keywords from `resources/demo/recipes.json` carry designed layers, modifier words
carry global tilt/decay/pitch/gain, stop words carry nothing, and every other piece (letters,
bytes of non-ASCII text) gets a seeded random texture so unknown words still sound distinct.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

import numpy as np

from engines.constants import TEXT_HIDDEN
from engines.demo import layout as lay
from engines.lazy import lazy_import
from engines.paths import resource_file

tokenizers = lazy_import("tokenizers")

SPECIAL_TOKENS = ("<pad>", "<eos>", "<bos>", "<unk>")
PAD_ID, EOS_ID, BOS_ID, UNK_ID = 0, 1, 2, 3
WORD_PREFIX = "\u2581"  # SentencePiece's word-start marker, as in T5Gemma
LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"
PUNCTUATION = ".,!?-'\":;()/&+#%*_=[]<>@$~|"
RANDOM_SEED = 20261129

DEFAULT_ENV = {
    "attack": 0.01, "decay": 1000.0, "repeat": 0.0, "repeat_decay": 0.1, "am_rate": 0.0,
    "am_depth": 0.0, "onset": 0.0, "variability": 0.3, "pan": 0.0, "swell": 0.0,
}
ENV_KEYS = {
    "attack": lay.ENV_ATTACK, "decay": lay.ENV_DECAY, "repeat": lay.ENV_REPEAT,
    "repeat_decay": lay.ENV_REPEAT_DECAY, "am_rate": lay.ENV_AM_RATE,
    "am_depth": lay.ENV_AM_DEPTH, "onset": lay.ENV_ONSET, "variability": lay.ENV_VARIABILITY,
    "pan": lay.ENV_PAN, "swell": lay.ENV_SWELL,
}
MIN_VARIABILITY = 0.12  # keeps different seeds audibly different even for steady tones


@dataclass(frozen=True)
class Vocabulary:
    pieces: tuple[str, ...]
    scores: tuple[float, ...]
    embeddings: np.ndarray  # (V, 768) float32
    bigrams: np.ndarray  # (BIGRAM_BUCKETS, SOUND_DIMS) float32: textures of spelled-out words


@cache
def load_recipes() -> dict:
    path = resource_file("demo", "recipes.json")
    return json.loads(path.read_text(encoding="utf-8"))


def _layer_profile(layer: dict) -> tuple[np.ndarray, np.ndarray]:
    """(noise, tone) band amplitudes of one layer, scaled to LATENT_SCALE * gain."""
    centers = np.log2(lay.noise_band_centers_hz())
    noise = np.zeros(lay.BANDS)
    for f0, width, gain_db in layer.get("noise", []):
        noise += 10 ** (gain_db / 20) * np.exp(-0.5 * ((centers - np.log2(f0)) / width) ** 2)
    tone = np.zeros(lay.BANDS)
    for freq, gain_db in layer.get("tones", []):
        idx = int(np.clip(round(lay.TONES_PER_OCTAVE * np.log2(freq / lay.TONE_BASE_HZ)), 0, 63))
        tone[idx] += 10 ** (gain_db / 20)
    total = np.sqrt(np.sum(noise**2) + np.sum(tone**2))
    if total == 0:
        return noise, tone
    scale = lay.LATENT_SCALE * 10 ** (layer.get("gain_db", 0.0) / 20) / total
    return noise * scale, tone * scale


def _write_layer(vec: np.ndarray, slot: int, layer: dict) -> None:
    base = slot * lay.LAYER_DIM
    noise, tone = _layer_profile(layer)
    vec[base + lay.NOISE_SLICE.start : base + lay.NOISE_SLICE.stop] = noise
    vec[base + lay.TONE_SLICE.start : base + lay.TONE_SLICE.stop] = tone
    env = {**DEFAULT_ENV, **{k: v for k, v in layer.items() if k in DEFAULT_ENV}}
    env["variability"] = max(env["variability"], MIN_VARIABILITY)
    for key, index in ENV_KEYS.items():
        vec[base + lay.ENV_OFFSET + index] = env[key]
    vec[base + lay.ENV_OFFSET + lay.ENV_GAIN] = 1.0


def _sound_vector(sound: dict, salience: float) -> np.ndarray:
    vec = np.zeros(TEXT_HIDDEN, dtype=np.float64)
    for slot, layer in enumerate(sound["layers"][: lay.LAYERS_PER_TOKEN]):
        _write_layer(vec, slot, layer)
    vec[lay.GLOBAL_OFFSET + lay.G_CHIRP] = sound.get("chirp", 0.0) * lay.TONES_PER_OCTAVE
    vec[lay.GLOBAL_OFFSET + lay.G_PITCH] = sound.get("pitch", 0.0) * lay.TONES_PER_OCTAVE
    vec[lay.CONTENT_DIM] = 1.0
    vec[lay.SALIENCE_DIM] = salience
    return vec


def _modifier_vector(mod: dict) -> np.ndarray:
    vec = np.zeros(TEXT_HIDDEN, dtype=np.float64)
    vec[lay.GLOBAL_OFFSET + lay.M_TILT] = mod.get("tilt_db", 0.0)
    vec[lay.GLOBAL_OFFSET + lay.M_DECAY] = mod.get("decay_log2", 0.0)
    vec[lay.GLOBAL_OFFSET + lay.M_PITCH] = mod.get("pitch_oct", 0.0) * lay.TONES_PER_OCTAVE
    vec[lay.GLOBAL_OFFSET + lay.M_GAIN] = mod.get("gain_db", 0.0)
    return vec


def _random_sound(rng: np.random.Generator) -> dict:
    """A plausible random texture for a piece with no recipe (letters, bytes)."""
    layer: dict = {"noise": [], "tones": []}
    for _ in range(rng.integers(1, 3)):
        layer["noise"].append([float(np.exp(rng.uniform(np.log(80), np.log(9000)))),
                               float(rng.uniform(0.4, 1.5)), float(rng.uniform(-8, 0))])
    if rng.random() < 0.5:
        root = float(np.exp(rng.uniform(np.log(70), np.log(2500))))
        ratios = [1.0, 2.0, 3.0, 1.5, 2.76][: rng.integers(1, 4)]
        layer["tones"] = [[root * r, float(-4 * i)] for i, r in enumerate(ratios)]
    layer["attack"] = float(10 ** rng.uniform(-2.5, -0.3))
    layer["decay"] = float(rng.choice([0.15, 0.4, 1.0, 2.5, 1000.0]))
    if rng.random() < 0.2:
        layer["repeat"] = float(rng.choice([0.279, 0.371, 0.557, 0.743]))
        layer["repeat_decay"] = float(rng.uniform(0.04, 0.2))
    if rng.random() < 0.3:
        layer["am_rate"] = float(rng.uniform(0.2, 4.5))
        layer["am_depth"] = float(rng.uniform(0.2, 0.8))
    if rng.random() < 0.15:
        layer["swell"] = 2.0
    layer["variability"] = float(rng.uniform(0.2, 0.9))
    layer["pan"] = float(rng.uniform(-0.4, 0.4))
    chirp = float(rng.uniform(-1.0, 1.0)) if rng.random() < 0.3 else 0.0
    return {"layers": [layer], "chirp": chirp}


def _spelled(rng: np.random.Generator) -> np.ndarray:
    """A letter or byte: a random texture with a widely spread salience, flagged as spelled."""
    vec = _sound_vector(_random_sound(rng), rng.uniform(-4.0, 1.0))
    vec[lay.SPELLED_DIM] = 1.0
    return vec


@cache
def build_vocabulary() -> Vocabulary:
    """Pieces, Unigram scores and embeddings, deterministic for a given recipes file."""
    recipes = load_recipes()
    rng = np.random.default_rng(RANDOM_SEED)
    pieces: list[str] = []
    scores: list[float] = []
    vectors: list[np.ndarray] = []

    def add(piece: str, score: float, vec: np.ndarray) -> None:
        pieces.append(piece)
        scores.append(score)
        vectors.append(vec)

    zero = np.zeros(TEXT_HIDDEN)
    for tok in SPECIAL_TOKENS:
        add(tok, 0.0, zero.copy())
    for byte in range(256):
        add(f"<0x{byte:02X}>", -12.0, _spelled(rng))
    add(WORD_PREFIX, -5.0, zero.copy())
    for ch in LETTERS:
        add(ch, -7.0, _spelled(rng))
    for ch in PUNCTUATION:
        add(ch, -7.0, zero.copy())
    for sound in recipes["sounds"]:
        vec = _sound_vector(sound, 1.0)
        for word in sound["words"]:
            add(WORD_PREFIX + word, -3.0, vec)
    for mod in recipes["modifiers"]:
        vec = _modifier_vector(mod)
        for word in mod["words"]:
            add(WORD_PREFIX + word, -3.0, vec)
    for word in recipes["stopwords"]:
        add(WORD_PREFIX + word, -3.0, zero.copy())

    table = np.stack(vectors).astype(np.float32)
    # Low-level "identity" features, like a real encoder's; the demo DiT ignores them.
    table[len(SPECIAL_TOKENS) :, lay.IDENTITY_OFFSET :] = 0.05 * rng.standard_normal(
        (len(pieces) - len(SPECIAL_TOKENS), TEXT_HIDDEN - lay.IDENTITY_OFFSET)
    ).astype(np.float32)
    pair_rng = np.random.default_rng(RANDOM_SEED + 1)
    bigrams = np.stack([_spelled(pair_rng)[: lay.SOUND_DIMS] for _ in range(lay.BIGRAM_BUCKETS)])
    return Vocabulary(tuple(pieces), tuple(scores), table, bigrams.astype(np.float32))


def build_tokenizer_json() -> str:
    """tokenizer.json text for the demo vocabulary (Unigram with byte fallback, like T5Gemma's)."""
    vocab = build_vocabulary()
    model = tokenizers.models.Unigram(list(zip(vocab.pieces, vocab.scores, strict=True)),
                                      unk_id=UNK_ID, byte_fallback=True)
    tok = tokenizers.Tokenizer(model)
    normalizers = tokenizers.normalizers
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace(replacement=WORD_PREFIX,
                                                            prepend_scheme="always")
    tok.decoder = tokenizers.decoders.Metaspace(replacement=WORD_PREFIX, prepend_scheme="always")
    tok.post_processor = tokenizers.processors.TemplateProcessing(
        single="$A <eos>", special_tokens=[("<eos>", EOS_ID)]
    )
    return tok.to_str()
