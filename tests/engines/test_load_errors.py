"""Reading TensorRT's log of a failed deserialize: real wordings, each with where it was seen.

Every log line below is copied from a public report of TensorRT 8.x or 10.x (the source is on
the comment above it); only the numbers of our own engines are substituted where a test says
so. The order of the reasons matters: several causes share words ("deserialize", "version").
"""

from __future__ import annotations

import pytest

from engines.backends.tensorrt.load_errors import describe_load_failure

TRT = "10.15.1.29"
DIT = "sm_90/sa3-m/dit_fp16.trt"
DEC = "sm_90/same-l/dec_fp16_chunkable_limiter.trt"
# The engine loader embeds the catalog's remedy in its own sentence (engines.backends), so it
# reads in plain words there: no front end's flags or controls.
AOT_REMEDY = ("get the AOT engines dec_fp16_chunkable_limiter.trt and enc_fp16_chunkable.trt "
              "with the models download command for medium.")

# The line TensorRT 8.x adds after any deserialize failure; it names no cause.
# https://github.com/RootKit-Org/AI-Aimbot/issues/109 (and most reports below)
DESERIALIZATION_FAILED = ("4: [runtime.cpp::nvinfer1::Runtime::deserializeCudaEngine::66] Error "
                          "Code 4: Internal Error (Engine deserialization failed.)")


def describe(errors: list[str], shown: str = DIT, folder_sm: str | None = "sm_90",
             gpu_sm: str | None = "sm_90") -> str:
    message = describe_load_failure(shown, errors, TRT, folder_sm, gpu_sm)
    assert one_sentence(message), message
    return message


def one_sentence(message: str) -> bool:
    return message.endswith(".") and "\n" not in message and ". " not in message


# ---- out of device memory ---------------------------------------------------------------------

# https://github.com/open-mmlab/Live2Diff/issues/9 (deserializing a UNet engine on an RTX 4090)
LIVE2DIFF_OOM = [
    "1: [defaultAllocator.cpp::allocate::19] Error Code 1: Cuda Runtime (out of memory)",
    "Requested amount of GPU memory (1180463648 bytes) could not be allocated. There may not be "
    "enough free memory for allocation to succeed.",
    "2: [safeDeserialize.cpp::load::269] Error Code 2: OutOfMemory (no further information)",
]


def test_out_of_memory_while_deserializing_is_not_a_version_problem() -> None:
    message = describe(LIVE2DIFF_OOM)
    assert message.startswith(f"There was not enough free GPU memory to load '{DIT}'")
    assert "(it asked for 1.2 GB)" in message and "close other programs" in message
    assert "version" not in message


def test_out_of_memory_from_errors_alone() -> None:
    # The "Requested amount" line is a warning; a logger that keeps only errors sees these.
    errors = [LIVE2DIFF_OOM[0], LIVE2DIFF_OOM[2]]
    message = describe(errors)
    assert message.startswith("There was not enough free GPU memory")
    assert "asked for" not in message
    # https://github.com/NVIDIA/TensorRT/issues/4258 (TensorRT 10.3)
    line = "[defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime (out of memory)"
    assert describe([line]).startswith("There was not enough free GPU memory")


def test_out_of_memory_reading_the_engine_names_the_size() -> None:
    # TensorRT 10 reading an engine on a full GPU, from a public project note (search index
    # file 8739799106); the archive reader's line must not read as a damaged file.
    errors = ["[defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime (out of memory)",
              "[engine.cpp::readEngineFromArchive::1091] Error Code 2: OutOfMemory (Requested size "
              "was 5244672 bytes.)"]
    assert "(it asked for 5 MB)" in describe(errors)


def test_out_of_memory_wins_over_a_folder_of_another_gpu() -> None:
    message = describe(LIVE2DIFF_OOM[2:], folder_sm="sm_120", gpu_sm="sm_90")
    assert "not enough free GPU memory" in message


# ---- CUDA driver ------------------------------------------------------------------------------

def test_driver_too_old_is_not_a_tensorrt_version_problem() -> None:
    # https://github.com/NVIDIA-AI-IOT/torch2trt/issues/711 (TensorRT 8.4)
    line = ("Error Code 1: Cuda Runtime (CUDA driver version is insufficient for CUDA runtime "
            "version)")
    message = describe([line])
    assert message == (f"The NVIDIA driver is too old for the CUDA version TensorRT {TRT} uses, "
                       f"so '{DIT}' could not be loaded; update the NVIDIA driver and restart "
                       "SA3 Studio.")


@pytest.mark.parametrize("line", [
    # https://github.com/NVIDIA/TensorRT/issues/2879 (TensorRT 8.6)
    "CUDA initialization failure with error: 35. Please check your CUDA installation:  "
    "http://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html",
    # https://github.com/lewes6369/TensorRT-Yolov3/issues/61 (older TensorRT)
    "Cuda initialization failure with error 35. Please check cuda installation:  "
    "http://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html.",
])
def test_cuda_error_35_at_initialization_is_an_old_driver(line: str) -> None:
    assert describe([line]).startswith("The NVIDIA driver is too old")


def test_other_cuda_initialization_failures_name_the_error() -> None:
    # https://github.com/NVIDIA/TensorRT/issues/149
    line = ("[TRT] Cuda initialization failure with error 100. Please check cuda installation:  "
            "http://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html.")
    message = describe([line])
    assert message.startswith("CUDA could not start (error 100)") and "nvidia-smi" in message


# ---- compute capability ----------------------------------------------------------------------

def test_incompatible_device_names_both_archs() -> None:
    # https://github.com/deepinsight/insightface/issues/2882 (TensorRT 10.8, RTX 4090)
    line = ("IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The engine plan file "
            "is generated on an incompatible device, expecting compute 8.9 got compute 8.6, "
            "please rebuild.)")
    message = describe([line], folder_sm=None, gpu_sm=None)
    assert message == (f"'{DIT}' was built for sm_86 but this GPU is sm_89; use the engines in "
                       "models/sm_89 or rebuild them.")


def test_incompatible_device_beside_an_assertion_that_mentions_deserialize() -> None:
    # https://github.com/QwenAudio/CosyVoice/issues/1600 (an sm_89 engine on an sm_90 GPU)
    errors = ["6: The engine plan file is generated on an incompatible device, expecting compute "
              "9.0 got compute 8.9, please rebuild.",
              "2: [engine.cpp::deserializeEngine::1312] Error Code 2: Internal Error (Assertion "
              "engine->deserialize(start, size, allocator, runtime) failed. )"]
    message = describe(errors, shown="sm_89/sa3-m/dit_fp16.trt", folder_sm="sm_89")
    assert "built for sm_89 but this GPU is sm_90" in message and "models/sm_90" in message


def test_an_engine_in_another_gpus_folder_is_named_when_the_log_is_unclear() -> None:
    # https://github.com/lix19937/tensorrt-insight/issues/65
    line = ("1: [stdArchiveReader.cpp::StdArchiveReader::32] Error Code 1: Serialization "
            "(Serialization assertion magicTagRead == kMAGIC_TAG failed.Magic tag does not match)")
    message = describe([line], shown="sm_120/sa3-m/dit_fp16.trt", folder_sm="sm_120")
    assert "built for sm_120 but this GPU is sm_90" in message


# ---- missing plugin ---------------------------------------------------------------------------

# TensorRT 10's registry line, seen in a public ModelOpt log (search index file 69882710095):
#   IPluginRegistry::getCreator: Error Code 4: API Usage Error (Cannot find plugin: DummyOp,
#   version: 1, namespace:.)
# and the line that follows every missing creator, TensorRT 8.5+:
# https://github.com/NVIDIA/TensorRT/issues/3327
CREATOR_NOT_FOUND = ("1: [pluginV2Runner.cpp::load::290] Error Code 1: Serialization "
                     "(Serialization assertion creator failed.Cannot deserialize plugin since "
                     "corresponding IPluginCreator not found in Plugin Registry)")


def test_missing_same_l_plugin_points_to_the_aot_engines() -> None:
    # The TensorRT 10 registry wording with our plugin's name and namespace substituted.
    errors = ["IPluginRegistry::getCreator: Error Code 4: API Usage Error (Cannot find plugin: "
              "diff_attn_swa, version: 1, namespace:samel.)", CREATOR_NOT_FOUND]
    shown = "sm_90/same-l/dec_dynamic_triton_swa.trt"
    message = describe(errors, shown=shown)
    assert message == (f"'{shown}' is a JIT SAME-L engine whose diff_attn_swa plugin must be "
                       f"registered from Python, which SA3 Studio does not do; {AOT_REMEDY}")
    assert "torch" not in message and "install" not in message


@pytest.mark.parametrize("shown", ["sm_90/same-l/dec_dynamic_triton_swa.trt",
                                   "sm_90/same-l/dec_dynamic_fp32.trt",
                                   "elsewhere/enc_dynamic_triton_swa.trt"])
def test_unnamed_plugin_in_a_jit_same_l_file_points_to_the_aot_engines(shown: str) -> None:
    message = describe([CREATOR_NOT_FOUND, DESERIALIZATION_FAILED], shown=shown)
    assert message.endswith(AOT_REMEDY) and "JIT SAME-L" in message


def test_other_missing_plugins_are_named_and_not_blamed_on_same_l() -> None:
    # https://github.com/Deci-AI/super-gradients/issues/1816 (TensorRT 8.6)
    errors = ["3: getPluginCreator could not find plugin: EfficientNMS_TRT version: 1",
              "1: [pluginV2Runner.cpp::load::303] Error Code 1: Serialization (Serialization "
              "assertion creator failed.Cannot deserialize plugin since corresponding "
              "IPluginCreator not found in Plugin Registry)"]
    message = describe(errors)
    assert message == (f"'{DIT}' needs the TensorRT plugin 'EfficientNMS_TRT' version 1, which is "
                       f"not registered in this TensorRT {TRT}; use engines built without it or "
                       "rebuild them from ONNX.")
    assert "SAME-L" not in message


def test_plugin_names_in_older_and_newer_wordings() -> None:
    # https://github.com/NVIDIA/TensorRT/issues/263 (TensorRT 6)
    old = describe(["INVALID_ARGUMENT: getPluginCreator could not find plugin Prelu_TRT version 1"])
    assert "'Prelu_TRT' version 1" in old
    # TensorRT 10, verbatim (search index file 69882710095)
    new = describe(["IPluginRegistry::getCreator: Error Code 4: API Usage Error (Cannot find "
                    "plugin: DummyOp, version: 1, namespace:.)"])
    assert "'DummyOp' version 1" in new
    # A same-s engine of the same name as a JIT SAME-L file is not SAME-L's problem.
    unnamed = describe([CREATOR_NOT_FOUND], shown="sm_90/same-s/dec_dynamic_fp32.trt")
    assert "needs a TensorRT plugin" in unnamed and "SAME-L" not in unnamed


# ---- TensorRT version -------------------------------------------------------------------------

def test_library_versions_are_both_named() -> None:
    # https://github.com/RootKit-Org/AI-Aimbot/issues/109 (expecting = installed, got = engine)
    errors = ["6: The engine plan file is not compatible with this version of TensorRT, "
              "expecting library version 8.5.1.7 got 8.5.3.1, please rebuild.",
              DESERIALIZATION_FAILED]
    assert describe(errors) == (f"'{DIT}' was built with TensorRT 8.5.3.1 but TensorRT 8.5.1.7 "
                                "is installed; download engines built for TensorRT 8.5.1.7 or "
                                "rebuild them.")


@pytest.mark.parametrize("line", [
    # https://github.com/westNeighbor/ComfyUI-ultimate-openpose-estimator/issues/9 (10.12)
    "IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The engine plan file is not "
    "compatible with this version of TensorRT, expecting library version 10.12.0.36 got .)",
    # TensorRT 10.14 in a public DeepStream README (search index file 66213589037)
    "IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The engine plan file is not "
    "compatible with this version of TensorRT, expecting library version 10.14.1.48 got \n..      "
    ", please rebuild. In checkEngineVersionCompatible at /_src/runtime/api/engine.cpp:871)",
])
def test_tensorrt_10_prints_no_readable_engine_version(line: str) -> None:
    message = describe([line])
    assert message.startswith(f"'{DIT}' was built with another TensorRT version than the "
                              "installed TensorRT 10.1")
    assert "got" not in message and "built with TensorRT ." not in message


def test_plan_format_versions_are_named() -> None:
    # https://github.com/yuvraj108c/ComfyUI-Dwpose-Tensorrt/issues/5 (TensorRT 10)
    line = ("IRuntime::deserializeCudaEngine: Error Code 1: Serialization (Serialization assertion "
            "stdVersionRead == kSERIALIZATION_VERSION failed.Version tag does not match. Note: "
            "Current Version: 237, Serialized Engine Version: 239)")
    message = describe([line])
    assert message == (f"'{DIT}' was built with another TensorRT version than the installed "
                       f"TensorRT {TRT} (plan format 239, this one reads 237); download engines "
                       f"built for TensorRT {TRT} or rebuild them.")


# ---- damaged or truncated file ----------------------------------------------------------------

@pytest.mark.parametrize("errors", [
    # https://github.com/lix19937/tensorrt-insight/issues/65 (an ONNX file read as a plan)
    ["1: [stdArchiveReader.cpp::StdArchiveReader::32] Error Code 1: Serialization (Serialization "
     "assertion magicTagRead == kMAGIC_TAG failed.Magic tag does not match)",
     "4: [runtime.cpp::deserializeCudaEngine::65] Error Code 4: Internal Error (Engine "
     "deserialization failed.)"],
    # TensorRT 10 through Triton server, search index file 12108025451
    ["1: [runtime.cpp::parsePlan::314] Error Code 1: Serialization (Serialization assertion "
     "plan->header.magicTag == rt::kPLAN_MAGIC_TAG failed.)"],
    # TensorRT 10 trtexec, search index file 41319842216
    ["Error[1]: [runtime.cpp::parsePlan::455] Error Code 1: Serialization (Serialization "
     "assertion plan->header.magicTag == rt::kPLAN_MAGIC_TAG failed.Trying to load an engine "
     "created with incompatible serialization version. Check that the engine was not created "
     "using safety runtime, same OS was used and version compatibility parameters were set "
     "accordingly.)"],
    # A truncated plan, TensorRT 8.6 (search index file 14416757038)
    ["1: [stdArchiveReader.cpp::StdArchiveReader::57] Error Code 1: Serialization (Serialization "
     "assertion sizeRead == static_cast<uint64_t>(mEnd - mCurrent) failed.Size specified in "
     "header does not match archive size)",
     DESERIALIZATION_FAILED],
    # https://github.com/NVIDIA/TensorRT/issues/302 (an empty engine file)
    ["INVALID_ARGUMENT: Cannot deserialize with an empty memory buffer.",
     "INVALID_CONFIG: Deserialize the cuda engine failed."],
])
def test_damaged_or_truncated_files_say_download_again(errors: list[str]) -> None:
    message = describe(errors)
    assert message == (f"'{DIT}' is not an engine TensorRT {TRT} can read (the file is damaged "
                       "or incomplete, or comes from a much older or newer TensorRT); download "
                       "it again or rebuild it.")


# ---- anything else ----------------------------------------------------------------------------

def test_unknown_failure_quotes_the_line_that_names_a_cause() -> None:
    # https://github.com/NVIDIA/TensorRT/issues/4372, then TensorRT 8.x's closing line
    errors = ["1: [defaultAllocator.cpp::nvinfer1::internal::DefaultAllocator::deallocate::61] "
              "Error Code 1: Cuda Runtime (unspecified launch failure)", DESERIALIZATION_FAILED]
    assert describe(errors) == (f"TensorRT {TRT} could not load '{DIT}' (Error Code 1: Cuda "
                                "Runtime (unspecified launch failure)); download the engine "
                                "again or rebuild it.")


def test_unknown_failure_with_only_generic_lines_or_none() -> None:
    generic = describe([DESERIALIZATION_FAILED])
    assert "(Error Code 4: Internal Error (Engine deserialization failed.));" in generic
    assert "built with" not in generic
    assert "(no reason was logged)" in describe([])


def test_an_aot_same_l_engine_with_a_quoted_sentence_stays_one_sentence() -> None:
    line = "Some future failure. It has two sentences."
    message = describe(["  ", line], shown=DEC)
    assert "(Some future failure; It has two sentences)" in message
