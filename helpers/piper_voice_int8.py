#!/usr/bin/env python3
"""Parley's reply voice, made smaller once at install: a Piper voice with the weights of its text
encoder, duration predictor and flows stored as int8 (ONNX Runtime's dynamic quantization), its
waveform decoder kept in float32, saved in ONNX Runtime's own format.

    piper_voice_int8.py SOURCE.onnx TARGET.ort     (SOURCE.onnx.json is copied to TARGET.ort.json)

Why (docs/benchmarks.md, "The speech helper's memory at start"; make bench-voice): en_US-joe-medium
is 63 MB of float32 weights, 60 of them in convolutions; the helper with its defaults held 240.5 MiB
once ready with the original and 199.9 to 200.0 with this file, the CPU a sentence about the same
(312 to 359 ms against 337 to 411), and Whisper heard it as well (word error rate on 20 sentences,
three processes each: 0.4 to 2.5 % against 1.7 to 2.1 %). Why not the decoder: it makes the
waveform itself, and at int8 (its 8-bit activations) the waveform it makes, everything before it
the same, is only 19.5 to 20.4 dB from the float32 one: a noise floor a listener hears, where int8
in the layers before it changes a sentence's timing and timbre as Piper's own sampling noise does.
The ORT format loads without the ONNX graph (about 5 MiB less than the same model as .onnx); saved
at the "extended" optimisation level so that the file has no layout tied to this CPU's vector width
(the "all" level's NCHWc transform), which the runtime adds again at load.

Run by scripts/tools/speech-models.sh with the speech venv's Python (onnx, onnxruntime); the tests'
natural voice (a user's) stays the float32 original, so the agent and the user never share weights.
"""

import os
import shutil
import sys
import tempfile


def main(source, target):
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(source, load_external_data=False)
    # Piper's exported VITS names each node by its module: "/dec/..." is the HiFi-GAN generator.
    decoder = [node.name for node in model.graph.node if node.name.startswith("/dec/")]
    if not decoder:
        sys.exit(f"piper_voice_int8: {source} has no /dec/ nodes: not a Piper (VITS) voice of the layout this expects")
    folder = os.path.dirname(os.path.abspath(target))
    with tempfile.TemporaryDirectory(dir=folder) as work:
        quantized = os.path.join(work, "int8.onnx")
        quantize_dynamic(source, quantized, op_types_to_quantize=["Conv", "MatMul"], weight_type=QuantType.QUInt8,
                         nodes_to_exclude=decoder)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = os.path.join(work, "voice.ort")
        options.add_session_config_entry("session.save_model_format", "ORT")
        ort.InferenceSession(quantized, sess_options=options, providers=["CPUExecutionProvider"])
        # The configuration first, the model last, each by rename: a TARGET that exists is whole.
        shutil.copyfile(f"{source}.json", os.path.join(work, "voice.ort.json"))
        os.replace(os.path.join(work, "voice.ort.json"), f"{target}.json")
        os.replace(os.path.join(work, "voice.ort"), target)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: piper_voice_int8.py SOURCE.onnx TARGET.ort")
    main(sys.argv[1], sys.argv[2])
