/// Sample-rate conversion with libspeexdsp's resampler, the usual choice in VoIP stacks: a
/// windowed-sinc filter whose quality (0-10) trades CPU for stop-band attenuation.
///
/// Stateful: it keeps filter history between calls, so a stream fed in pieces resamples exactly as
/// if fed whole. Not thread-safe; one per stream.
public final class Resampler {
    public enum Quality: Int32, Sendable {
        /// libspeexdsp's SPEEX_RESAMPLER_QUALITY_VOIP: enough for speech recognition and playback.
        case voip = 3
        case standard = 4
        /// SPEEX_RESAMPLER_QUALITY_DESKTOP.
        case desktop = 5
        case best = 10
    }

    public enum Failure: Error, Equatable, Sendable {
        case unsupportedRate(Int)
        case libspeexdsp(code: Int32)
    }

    public let inputRate: Int
    public let outputRate: Int
    public let channels: Channels
    private let state: SpeexResamplerState

    public init(from inputRate: Int, to outputRate: Int, channels: Channels = .mono, quality: Quality = .voip) throws(Failure) {
        // speexdsp accepts any positive rates; beyond these the ratios stop making sense for voice.
        for rate in [inputRate, outputRate] where !(1000...384_000).contains(rate) { throw .unsupportedRate(rate) }
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        do {
            state = try SpeexResamplerState(channels: channels.rawValue, inputRate: inputRate, outputRate: outputRate, quality: quality.rawValue)
        } catch {
            guard case .resampler(let code) = error else { throw .libspeexdsp(code: 0) }
            throw .libspeexdsp(code: code)
        }
    }

    /// Interleaved output samples that `inputCount` interleaved input samples can produce, at most.
    public func outputCapacity(forInput inputCount: Int) -> Int {
        let perChannel = inputCount / channels.rawValue
        return (perChannel * outputRate + inputRate - 1) / inputRate * channels.rawValue + 8 * channels.rawValue
    }

    /// Resamples as much of `input` as fits in `output`; counts are interleaved samples.
    @discardableResult
    public func process(_ input: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>) -> (consumed: Int, produced: Int) {
        guard let inBase = input.baseAddress, let outBase = output.baseAddress else { return (0, 0) }
        var inLength = UInt32(input.count / channels.rawValue)
        var outLength = UInt32(output.count / channels.rawValue)
        state.process(inBase, &inLength, outBase, &outLength)
        return (Int(inLength) * channels.rawValue, Int(outLength) * channels.rawValue)
    }

    @discardableResult
    public func process(_ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>) -> (consumed: Int, produced: Int) {
        guard let inBase = input.baseAddress, let outBase = output.baseAddress else { return (0, 0) }
        var inLength = UInt32(input.count / channels.rawValue)
        var outLength = UInt32(output.count / channels.rawValue)
        state.process(inBase, &inLength, outBase, &outLength)
        return (Int(inLength) * channels.rawValue, Int(outLength) * channels.rawValue)
    }

    /// Resamples a whole buffer into a new array, allocated once at its final capacity.
    public func process(_ input: UnsafeBufferPointer<Int16>) -> [Int16] {
        [Int16](unsafeUninitializedCapacity: outputCapacity(forInput: input.count)) { output, count in
            count = process(input, into: output).produced
        }
    }

    public func process(_ input: [Int16]) -> [Int16] {
        input.withUnsafeBufferPointer { process($0) }
    }

    /// Input samples per channel the filter holds back: the delay it adds.
    public var inputLatency: Int { state.inputLatency }

    /// Clears the filter history for an unrelated stream.
    public func reset() {
        state.reset()
    }
}
