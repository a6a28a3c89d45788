import CONNXRuntime

/// Why ONNX Runtime could not load a library or a model, or run one: its own message.
public struct ONNXRuntimeError: Error, Equatable, CustomStringConvertible {
    public let description: String

    init(description: String) {
        self.description = description
    }

    /// The nul-terminated reason the C side wrote.
    fileprivate init(said buffer: [CChar]) {
        description = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}

/// A tensor the caller owns, for one run: its name in the model, its elements and its shape.
/// Floats, unless `isInt64` (Silero's sample rate, a scalar).
struct ONNXTensor {
    let name: StaticString
    let data: UnsafeMutableRawPointer
    let shape: UnsafeBufferPointer<Int64>
    var isInt64 = false
}

/// ONNX Runtime's C API (CONNXRuntime, opened with dlopen from the onnxruntime wheel), the one file
/// that calls it. A session runs on the thread that calls `run`, with no thread of ONNX Runtime's
/// own (one intra-op and one inter-op thread: the caller's); it is used by one thread at a time.
final class ONNXSession: @unchecked Sendable {
    // @unchecked: an opaque C pointer, used by one loop's thread at a time (its owner's rule).
    private let pointer: OpaquePointer

    /// Opens the library at `path`, once a process (the first path given is the one opened).
    static func load(library path: String) throws(ONNXRuntimeError) {
        var error = [CChar](repeating: 0, count: 512)
        if parley_ort_load(path, &error, error.count) != 0 { throw ONNXRuntimeError(said: error) }
    }

    /// A session for the model at `path`, after `load`.
    init(model path: String) throws(ONNXRuntimeError) {
        var error = [CChar](repeating: 0, count: 512)
        guard let made = parley_ort_session_new(path, &error, error.count) else { throw ONNXRuntimeError(said: error) }
        pointer = made
    }

    deinit { parley_ort_session_free(pointer) }

    /// Runs the model on `inputs`, writing `outputs` (whose buffers have the shapes the model gives).
    /// The C descriptions of the tensors live on the stack for the call.
    func run(_ inputs: [ONNXTensor], _ outputs: [ONNXTensor]) throws(ONNXRuntimeError) {
        let count = inputs.count + outputs.count
        let failure: String? = withUnsafeTemporaryAllocation(of: parley_ort_tensor.self, capacity: count) { tensors in
            for i in 0..<count {
                let tensor = i < inputs.count ? inputs[i] : outputs[i - inputs.count]
                tensors.initializeElement(at: i, to: parley_ort_tensor(name: UnsafeRawPointer(tensor.name.utf8Start).assumingMemoryBound(to: CChar.self),
                                                                       data: tensor.data, shape: tensor.shape.baseAddress, rank: tensor.shape.count,
                                                                       is_int64: tensor.isInt64 ? 1 : 0))
            }
            return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 512) { error in
                let base = tensors.baseAddress!
                guard parley_ort_run(pointer, base, inputs.count, base + inputs.count, outputs.count, error.baseAddress, error.count) != 0 else { return nil }
                return String(cString: error.baseAddress!)
            }
        }
        if let failure { throw ONNXRuntimeError(description: failure) }
    }
}
