"""The demo's second codec tier: the demo decoder with its band coefficients quantised coarsely.

Real SA3 codecs come in quantised tiers (fp8, fp8_fast) that trade fidelity for speed. The demo
has no speed to gain, but tier choice and the decode-only comparison should run (and be tested)
on every machine, so the demo ships one extra decoder file whose only difference is a float
quantisation of the latent before synthesis, in the spirit of a low-precision codec: every band
coefficient keeps MANTISSA_BITS bits of mantissa (relative steps of 1/4 within an octave, like a
very small float format) and coefficients below FLUSH_BELOW are flushed to zero. The result is
audibly rougher (a grainier spectrum, quiet partials gone), which is what a listener should hear
when comparing it with the canonical demo tier.

Only operators TensorRT's ONNX parser imports are used (see graph_builder.py), and the arithmetic is
exact in float32 for the values it produces, so the tier decodes the same on every backend.
"""

from __future__ import annotations

import numpy as np

MANTISSA_BITS = 2
FLUSH_BELOW = 1.0 / 64.0  # about -36 dB under a full-scale coefficient of the demo latent
_TINY = 1e-30  # keeps Log finite for exact zeros (they are flushed anyway)

DESCRIPTION = ("Demo tier (procedural, not Stable Audio 3): the demo decoder with every band "
               f"coefficient rounded to {MANTISSA_BITS} mantissa bits and quiet ones flushed, "
               "a stand-in for a fast low-precision codec tier.")


def quantize(g, z: str) -> str:
    """`z` (any shape) quantised as described above; `g` is a GraphBuilder."""
    magnitude = g.op("Max", g.op("Abs", z), g.f(_TINY))
    # floor(log2|z|) gives the octave; the step inside it is 2^(octave - bits).
    octave = g.op("Floor", g.div(g.op("Log", magnitude), g.f(float(np.log(2.0)))))
    step = g.op("Pow", g.f(2.0), g.sub(octave, g.f(float(MANTISSA_BITS))))
    rounded = g.mul(g.op("Round", g.div(magnitude, step)), step)
    kept = g.mul(g.op("Sign", z), rounded)
    return g.op("Where", g.op("Less", magnitude, g.f(FLUSH_BELOW)), g.f(0.0), kept)


