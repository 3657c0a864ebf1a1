"""Small engine inputs are stored in the type the engine declares (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

from engines.backends.tensorrt import dtypes
from engines.errors import BackendError

ml_dtypes = pytest.importorskip("ml_dtypes")  # an independent bfloat16 (installed with onnx)


def test_bfloat16_bits_round_like_an_independent_implementation() -> None:
    rng = np.random.default_rng(7)
    values = np.concatenate([
        rng.standard_normal(10_000).astype(np.float32) * 10.0 ** rng.integers(-30, 30, 10_000),
        np.array([0.0, -0.0, 1.0, 0.977, 3.0, 1e-40, np.inf, -np.inf, 3.3895314e38],
                 np.float32)])
    ours = dtypes.bfloat16_bits(values)
    theirs = values.astype(ml_dtypes.bfloat16).view(np.uint16)
    np.testing.assert_array_equal(ours, theirs)
    assert np.isnan(np.array(dtypes.bfloat16_bits(np.float32(np.nan)), np.uint16).view(
        ml_dtypes.bfloat16).astype(np.float32))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_store_writes_the_declared_type(dtype: str) -> None:
    storage = np.zeros(4, dtypes.host_type("dit", "t", dtype, dtypes.FLOAT_TYPES))
    dtypes.store(storage, np.array([0.977, 0.5, 1.0, 0.0], np.float32), dtype)
    decoded = storage.view(ml_dtypes.bfloat16) if dtype == "bfloat16" else storage
    np.testing.assert_allclose(decoded.astype(np.float32), [0.977, 0.5, 1.0, 0.0], rtol=4e-3)


def test_an_input_type_we_cannot_feed_is_one_sentence() -> None:
    with pytest.raises(BackendError) as err:
        dtypes.host_type("dit_fp8.trt", "t", "fp8", dtypes.FLOAT_TYPES)
    message = str(err.value)
    assert "'dit_fp8.trt'" in message and "'t'" in message and "fp8" in message
    assert message.endswith(".") and "\n" not in message
