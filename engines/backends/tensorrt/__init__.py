"""TensorRT backend: SA3 engines driven through TensorRT 10 and cuda-python, one CUDA graph per
generation. Nothing here imports tensorrt or cuda at module level."""
