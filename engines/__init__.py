"""Everything that turns a generation request into audio. No Qt, no sounddevice; heavy imports
(tensorrt, cuda, onnxruntime) happen lazily inside the backend that needs them."""
