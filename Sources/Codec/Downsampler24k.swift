/// A microphone's 24 kHz pcm16 (the Realtime API's rate) to the 16 kHz the engine hears, for the
/// cost of what is in it: a frame with sound goes through libspeexdsp's filter (`Resampler`), a
/// frame below `PCM.quietMeanSquare` (-60 dBFS, where nothing is heard) is decimated by linear
/// interpolation, which costs a few operations a sample. Measured with 200 live microphones of
/// faint noise (-66 dBFS), the filter was 23 % of the server's CPU samples (perf), more than any
/// other part of a frame's path; a quiet microphone is the common one (docs/benchmarks.md,
/// "Density").
///
/// Every frame gives two thirds of its samples (a fraction carried between frames), whichever way
/// it goes, so the session's audio clock never drifts. The filter's history is primed from the
/// quiet audio when sound returns, so its first output is not a step from old sound; what the
/// switch costs is the filter's delay (`Resampler.inputLatency`, 1.5 ms) of quiet audio said
/// twice when sound starts and of the sound's tail left out when it stops, each under -60 dBFS or
/// at its edge. Not thread-safe; one per stream.
public final class Downsampler24k {
    public static let inputRate = 24_000
    public static let outputRate = 16_000

    private var filter: Resampler?
    /// The last input samples, for priming the filter when sound returns: the filter's length.
    private var tail: [Int16]
    private var quiet = true
    /// Twice the position of the next output in the next frame, when decimating: -1, 0 or 1 (the
    /// outputs fall on whole and half input samples, every 1.5; -1 is half way from the last
    /// frame's last sample).
    private var nextHalfSample = 0

    /// Whether the last frame was below the quiet level: a test reads it.
    public var lastFrameWasQuiet: Bool { quiet }

    public init() {
        tail = [Int16](repeating: 0, count: Self.primingSamples)
    }

    /// Twice the filter's delay: priming with it leaves the filter's history full of the quiet
    /// audio and its output (discarded) two thirds of the excess.
    static let primingSamples = 72

    /// 16 kHz samples for `input` (mono 24 kHz).
    public func process(_ input: UnsafeBufferPointer<Int16>) throws(Resampler.Failure) -> [Int16] {
        let wasQuiet = quiet
        quiet = Self.isQuiet(input)
        let output: [Int16]
        if quiet {
            output = decimated(input)
        } else {
            if filter == nil { filter = try Resampler(from: Self.inputRate, to: Self.outputRate) }
            if wasQuiet { prime(filter!) }
            output = filter!.process(input)
            nextHalfSample = 0
        }
        keepTail(input)
        return output
    }

    /// The frame's mean square against the quiet level (an empty frame is not quiet: it changes
    /// nothing).
    static func isQuiet(_ input: UnsafeBufferPointer<Int16>) -> Bool {
        guard !input.isEmpty else { return false }
        let level = PCM.rms(input)
        return level * level < PCM.quietMeanSquare
    }

    /// Linear interpolation at every 1.5 input samples: no filter, which a frame under -60 dBFS
    /// does not need (what it folds back is quieter still).
    private func decimated(_ input: UnsafeBufferPointer<Int16>) -> [Int16] {
        let twice = 2 * input.count
        var position = nextHalfSample
        let count = position > twice - 2 || input.isEmpty ? 0 : (twice - 2 - position) / 3 + 1
        let output = [Int16](unsafeUninitializedCapacity: count) { out, written in
            var k = 0
            if position < 0, count > 0 {
                out[0] = Int16((Int32(tail[tail.count - 1]) + Int32(input[0])) >> 1)
                k = 1
                position += 3
            }
            while position <= twice - 2 {
                let i = position >> 1
                out[k] = position & 1 == 0 ? input[i] : Int16((Int32(input[i]) + Int32(input[i + 1])) >> 1)
                k += 1
                position += 3
            }
            written = k
        }
        nextHalfSample = position - twice
        return output
    }

    /// The filter's history made the quiet audio before this frame, its output discarded.
    private func prime(_ filter: Resampler) {
        filter.reset()
        var discard = [Int16](repeating: 0, count: Self.primingSamples)
        tail.withUnsafeBufferPointer { primer in
            discard.withUnsafeMutableBufferPointer { _ = filter.process(primer, into: $0) }
        }
    }

    private func keepTail(_ input: UnsafeBufferPointer<Int16>) {
        let n = tail.count
        if input.count >= n {
            for i in 0..<n { tail[i] = input[input.count - n + i] }
        } else {
            tail.removeFirst(input.count)
            tail.append(contentsOf: input)
        }
    }
}
