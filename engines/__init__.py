"""Everything that turns a generation request into audio. No Qt, no sounddevice; heavy imports
(tensorrt, cuda, onnxruntime, scipy, ...) are declared at module top with engines.lazy and load
on first use."""
