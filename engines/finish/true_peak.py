"""True peak (BS.1770-4 Annex 2): the largest magnitude of the 4x oversampled signal.

4x oversampling with the 48-tap interpolation filter printed in BS.1770-4 Annex 2 (four phases of
12 taps; meters that follow the Annex read the same), run as small matrix products, and never
taken below the sample peak. Its passband ripples by about +-0.2 dB and four points per sample
can miss a crest by up to 0.17 dB at a quarter of the rate, so readings of band-limited audio
land within about 0.3 dB of the ideal reconstruction's peak (tests hold it to FFT
interpolation); audio reaching up to the Nyquist frequency reads lower, as it does on any meter
and any converter whose filter rolls off there.
"""

from __future__ import annotations

import numpy as np

from engines.finish.audio_shape import as_2d

# BS.1770-4 Annex 2: the first six of the 12 taps of each of the 4 phases. The 48-tap prototype
# is symmetric, so taps 6..11 are taps 5..0 of the mirror phase (3 - p).
_ANNEX2_HALF = np.array([
    [0.0017089843750, -0.0291748046875, -0.0189208984375, -0.0083007812500],
    [0.0109863281250, 0.0292968750000, 0.0330810546875, 0.0148925781250],
    [-0.0196533203125, -0.0517578125000, -0.0582275390625, -0.0266113281250],
    [0.0332031250000, 0.0891113281250, 0.1015625000000, 0.0476074218750],
    [-0.0594482421875, -0.1665039062500, -0.2003173828125, -0.1022949218750],
    [0.1373291015625, 0.4650878906250, 0.7797851562500, 0.9721679687500],
])
ANNEX2_PHASES = np.vstack([_ANNEX2_HALF, _ANNEX2_HALF[::-1, ::-1]]).T  # (4 phases, 12 taps)
TAPS = 12
OVERSAMPLING = 4
# The symmetric 48-tap filter delays by 23.5 oversampled points: output frame k, phase p, is the
# signal at input time k - 5.875 + p / 4. So the points interpolated between input frames m - 1
# and m + 1 are outputs m + 5 and m + 6.
_FILTER_DELAY = 5

# Rows of 12 frames per matrix product. OpenBLAS runs a product this small (m*n*k <= 2**18) on
# one thread; larger ones start its thread pool, which on a busy 2-core machine spins and was
# measured 10x slower than one thread.
_GEMM_ROWS = 448


def _polyphase_matrices() -> tuple[np.ndarray, np.ndarray]:
    """(A, B), each (12, 48): for rows X of 12 input frames, X[r] @ A + X[r-1] @ B gives the
    12 x 4 oversampled outputs of row r (frame-major, phase-minor)."""
    a = np.zeros((TAPS, TAPS, OVERSAMPLING))
    b = np.zeros((TAPS, TAPS, OVERSAMPLING))
    for j in range(TAPS):  # input frame within the row
        for i in range(TAPS):  # output frame within the row
            if i >= j:
                a[j, i] = ANNEX2_PHASES[:, i - j]
            else:
                b[j, i] = ANNEX2_PHASES[:, i - j + TAPS]
    shape = (TAPS, TAPS * OVERSAMPLING)
    return a.reshape(shape).astype(np.float32), b.reshape(shape).astype(np.float32)


_A, _B = _polyphase_matrices()
# The largest gain of any phase for a signal bounded by 1 (the sum of its taps' magnitudes,
# about 2.02): no interpolated point exceeds this times the largest sample it is made from.
_MAX_OVERSHOOT = float(np.abs(ANNEX2_PHASES).sum(axis=1).max())


def _channel_rows(audio: np.ndarray, circular: bool) -> np.ndarray:
    """(channels, rows, 12) float32: each channel as rows of 12 frames, with one history row in
    front (silence, or the end of the take for a loop) and enough after it to flush the filter
    (silence, or the start of the take, so a loop's wrap is measured too)."""
    x = as_2d(audio)
    n, channels = x.shape
    needed = -(-(n + TAPS - 1) // TAPS)
    rows = 1 + -(-needed // _GEMM_ROWS) * _GEMM_ROWS  # whole chunks: see true_peak
    widths = ((0, 0), (TAPS, rows * TAPS - TAPS - n))
    if circular:  # "wrap" repeats a take shorter than the padding as often as needed
        padded = np.pad(x.T.astype(np.float32), widths, mode="wrap")
    else:
        padded = np.zeros((channels, rows * TAPS), dtype=np.float32)
        padded[:, TAPS:TAPS + n] = x.T
    return padded.reshape(channels, rows, TAPS)


def _chunk(rows: np.ndarray, r0: int) -> np.ndarray:
    """(rows, 48) oversampled values of rows r0 .. r0 + _GEMM_ROWS - 1 of one channel."""
    r1 = min(len(rows), r0 + _GEMM_ROWS)
    y = rows[r0:r1] @ _A
    y += rows[r0 - 1:r1 - 1] @ _B
    return y


def sample_peak(audio: np.ndarray) -> float:
    if audio.size == 0:
        return 0.0
    return float(max(audio.max(), -audio.min()))


def _chunk_bounds(channel_rows: np.ndarray) -> np.ndarray:
    """(channels, chunks): the largest sample magnitude each chunk's outputs are made from.
    Chunk k is made from rows 448k .. 448k + 448: its own segment and the next one's first row.
    No output of the chunk exceeds its bound times _MAX_OVERSHOOT."""
    channels, rows, _ = channel_rows.shape
    chunks = (rows - 1) // _GEMM_ROWS
    segments = channel_rows[:, :-1].reshape(channels, chunks, _GEMM_ROWS * TAPS)
    peaks = np.maximum(segments.max(axis=2), -segments.min(axis=2))
    last_row = np.abs(channel_rows[:, -1]).max(axis=1, keepdims=True)
    return np.maximum(peaks, np.concatenate([peaks[:, 1:], last_row], axis=1))


def true_peak(audio: np.ndarray, circular: bool = False) -> float:
    """Linear true peak over all channels: the largest magnitude of the 4x oversampled signal
    (BS.1770-4 Annex 2), or the sample peak if that is larger. `circular` measures a loop
    as it plays, across its wrap.

    Exact, but lazy: chunks are oversampled loudest first, and once a chunk's bound is under
    the peak found so far, none of the rest can change it (quiet tails and gaps are skipped)."""
    if len(audio) == 0:
        return 0.0
    channel_rows = _channel_rows(audio, circular)
    bounds = _chunk_bounds(channel_rows)
    best = float(bounds.max())  # the sample peak
    for index in np.argsort(bounds, axis=None)[::-1]:
        channel, chunk = divmod(int(index), bounds.shape[1])
        if bounds[channel, chunk] * _MAX_OVERSHOOT <= best:
            break
        y = _chunk(channel_rows[channel], 1 + chunk * _GEMM_ROWS)
        best = max(best, float(y.max()), float(-y.min()))
    return best


def frame_true_peaks(audio: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """(N,) float64: for each frame, the largest oversampled magnitude (any channel) between
    the frame before and the frame after it: what a true-peak limiter must keep down. Chunks
    that cannot exceed `floor` are not oversampled (their frames read their sample peak)."""
    x = as_2d(audio)
    n = len(x)
    channel_rows = _channel_rows(x, circular=False)
    out = np.zeros((channel_rows.shape[1] - 1) * TAPS, dtype=np.float32)
    for rows, bounds in zip(channel_rows, _chunk_bounds(channel_rows), strict=True):
        for chunk in np.flatnonzero(bounds * _MAX_OVERSHOOT > floor):
            start = int(chunk) * _GEMM_ROWS * TAPS
            y = np.abs(_chunk(rows, 1 + int(chunk) * _GEMM_ROWS)).reshape(-1, OVERSAMPLING)
            view = out[start:start + len(y)]
            np.maximum(view, y.max(axis=1), out=view)
    # Outputs k + 5 and k + 6 hold the points interpolated from frame k - 1 to k + 1.
    near = np.maximum(out[_FILTER_DELAY:_FILTER_DELAY + n],
                      out[_FILTER_DELAY + 1:_FILTER_DELAY + 1 + n])
    return np.maximum(near, np.abs(x).max(axis=1)).astype(np.float64)
