"""Reading and writing audio files, and the PCM conversions around them.

Everything the engines consume or produce is float32 stereo at SAMPLE_RATE, shape (N, 2). Files
in any format libsndfile reads are brought to that shape here (downmix, resample); finished
clips are written by engines.delivery. Every failure becomes an AudioFileError with one
sentence for the user; soundfile and soxr exceptions never escape, they are chained as the
cause.

Scaling conventions (one place, so the rest of the app never has to think about them):
- In memory, 16-bit PCM is symmetric: full scale is +-PCM_CLAMP (32767), never -32768, the same
  as the decoder contract. `pcm16_from_float` and `float_from_pcm16` use 32767 and invert each
  other exactly.
- Writing floats to N-bit PCM uses the same symmetric rule: +-(2**(N-1) - 1).
- Reading follows libsndfile: an N-bit sample is divided by 2**(N-1), so even a foreign file's
  most negative code (-32768) stays inside [-1, 1]. A file we wrote therefore reads back 32767/32768
  (-0.0003 dB) quieter than the floats that went in, which nobody can hear.

Callers import from here; the work is split by job:
    pcm        PCM conversions, fit_length, and a generated take's audio as int16 stereo
    formats    the file formats a take can leave as (imported by name, not re-exported)
    convert    channel fold-down and resampling to SAMPLE_RATE
    reading    audio_info and read_audio, with their error sentences
    atomic     the temporary file an atomic save goes through
    os_errors  OS errors as words for the user
Writing audio is the delivery layer's (engines.delivery.writer).
"""

from engines.audio_io.convert import RESAMPLE_QUALITY
from engines.audio_io.pcm import (
    fit_length,
    float_from_pcm16,
    pcm16_from_float,
    pcm16_from_int32,
    result_pcm16,
)
from engines.audio_io.reading import READABLE_FORMATS_HINT, AudioInfo, audio_info, read_audio
from engines.errors import AudioFileError

__all__ = [
    "READABLE_FORMATS_HINT",
    "RESAMPLE_QUALITY",
    "AudioFileError",
    "AudioInfo",
    "audio_info",
    "fit_length",
    "float_from_pcm16",
    "pcm16_from_float",
    "pcm16_from_int32",
    "read_audio",
    "result_pcm16",
]
