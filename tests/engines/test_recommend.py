"""What the "Get models" page recommends for a machine, decided from its GPU alone."""

from __future__ import annotations

import re

import pytest

from engines.gpu import GpuInfo
from engines.models.recommend import recommend

GIB = 2**30
H200 = GpuInfo("NVIDIA H200", 9, 0, 150_000_000_000, "13.0")
RTX_4090 = GpuInfo("NVIDIA GeForce RTX 4090", 8, 9, 24 * GIB, "12.8")
RTX_5090 = GpuInfo("NVIDIA GeForce RTX 5090", 12, 0, 32 * GIB, "12.8")
RTX_3070_8GB = GpuInfo("NVIDIA GeForce RTX 3070", 8, 6, 8 * GIB, "12.8")
GTX_1650_4GB = GpuInfo("NVIDIA GeForce GTX 1650", 7, 5, 4 * GIB, "12.8")
MEMORY_UNKNOWN = GpuInfo("NVIDIA H100", 9, 0, None, None)
FLAG = re.compile(r"(?<![\w-])--[a-z]")


def test_h200_gets_medium_as_ready_made_engines():
    rec = recommend(H200)
    assert (rec.model, rec.precision, rec.backend, rec.file_kind) == \
        ("medium", "fp16", "tensorrt", "trt")
    assert not rec.build_here
    assert rec.vram_needed_gb == 14 and rec.download_gb == 6.6
    assert rec.caveat is None  # 150 GB is plenty
    assert "NVIDIA H200" in rec.machine and "140 GB of memory" in rec.machine
    assert "Medium at fp16" in rec.advice and "14 GB" in rec.advice


def test_rtx_4090_gets_medium_built_here_since_no_engines_are_published_for_it():
    rec = recommend(RTX_4090)
    assert (rec.model, rec.precision, rec.backend, rec.file_kind) == \
        ("medium", "fp16", "tensorrt", "onnx")
    assert rec.build_here and rec.download_gb is None  # the hub's list gives the size
    assert rec.vram_needed_gb == 14
    assert "built here" in rec.advice


def test_a_card_of_a_published_architecture_downloads_its_engines():
    rec = recommend(RTX_5090)
    assert (rec.model, rec.file_kind, rec.build_here) == ("medium", "trt", False)


def test_an_8_gb_card_gets_a_small_set_and_is_told_it_is_tight():
    rec = recommend(RTX_3070_8GB)
    assert (rec.model, rec.precision, rec.backend) == ("sm-sfx", "fp16", "tensorrt")
    assert rec.vram_needed_gb == 8 and rec.build_here
    assert rec.caveat is not None and "close other programs" in rec.caveat
    assert "Small SFX" in rec.advice and "8 GB" in rec.advice
    assert "about 8 GB, just enough" in rec.caveat  # an "8 GB" card is called that


@pytest.mark.parametrize("gpu", [None, GTX_1650_4GB])
def test_no_usable_gpu_means_the_demo_now_or_onnx_on_the_processor(gpu):
    rec = recommend(gpu)
    assert (rec.model, rec.backend, rec.file_kind) == ("sm-sfx", "onnxruntime", "onnx")
    assert not rec.build_here and rec.vram_needed_gb is None
    assert "demo model already works" in rec.advice and "processor" in rec.advice
    assert "longer" in rec.caveat  # honest about speed
    if gpu is None:
        assert "No NVIDIA graphics card" in rec.machine
    else:
        assert "4 GB" in rec.advice and "8 GB" in rec.advice  # why this card is not enough


def test_a_card_whose_memory_is_unknown_is_offered_medium_with_the_figure():
    rec = recommend(MEMORY_UNKNOWN)
    assert rec.model == "medium" and rec.file_kind == "trt"
    assert "14 GB" in rec.advice and "could not be read" in rec.advice


@pytest.mark.parametrize("gpu", [None, H200, RTX_4090, RTX_3070_8GB, GTX_1650_4GB,
                                 MEMORY_UNKNOWN])
def test_the_sentences_are_plain(gpu):
    rec = recommend(gpu)
    for text in (rec.machine, rec.advice, rec.caveat or ""):
        assert not FLAG.search(text) and "sm_" not in text and "t5gemma" not in text
