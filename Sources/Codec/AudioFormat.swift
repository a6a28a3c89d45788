/// The sample rates libopus works at natively; anything else is resampled first.
public enum SampleRate: Int, Sendable, CaseIterable {
    case hz8000 = 8000
    case hz12000 = 12000
    case hz16000 = 16000
    case hz24000 = 24000
    case hz48000 = 48000
}

public enum Channels: Int, Sendable, CaseIterable {
    case mono = 1
    case stereo = 2
}

/// Interleaved PCM: how many samples a second, how many channels.
public struct AudioFormat: Sendable, Equatable, CustomStringConvertible {
    public let sampleRate: SampleRate
    public let channels: Channels

    public init(sampleRate: SampleRate, channels: Channels) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// 48 kHz mono: what browsers' WebCodecs Opus produces and what Parley speaks by default.
    public static let voice = AudioFormat(sampleRate: .hz48000, channels: .mono)

    /// Samples per channel in `milliseconds` (may be fractional for 2.5 ms: then rounded down).
    public func samplesPerChannel(milliseconds: Double) -> Int {
        Int(Double(sampleRate.rawValue) * milliseconds / 1000)
    }

    public var description: String { "\(sampleRate.rawValue) Hz \(channels == .mono ? "mono" : "stereo")" }
}

/// Opus frame durations (RFC 6716 section 2.1.4; 80-120 ms since libopus 1.2).
public enum FrameDuration: Int, Sendable, CaseIterable {
    /// The raw value is tenths of a millisecond, so 2.5 ms is representable.
    case ms2_5 = 25, ms5 = 50, ms10 = 100, ms20 = 200, ms40 = 400, ms60 = 600, ms80 = 800, ms100 = 1000, ms120 = 1200

    public var milliseconds: Double { Double(rawValue) / 10 }

    public func samplesPerChannel(at rate: SampleRate) -> Int { rate.rawValue * rawValue / 10_000 }

    /// The duration whose frame holds exactly this many samples per channel, if any.
    public init?(samplesPerChannel: Int, at rate: SampleRate) {
        guard let match = Self.allCases.first(where: { $0.samplesPerChannel(at: rate) == samplesPerChannel }) else { return nil }
        self = match
    }
}
