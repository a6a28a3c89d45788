import ArgumentParser
import Codec

/// How the load client encodes its speech: the audio band its Opus packets carry, which decides
/// the decoder's work on the server far more than anything the server does itself.
///
/// Parley listens at 16 kHz (VAD and recognition need no more), so its own clients encode
/// wideband: libopus then codes speech with SILK alone. A fullband packet at the same bitrate is
/// SILK plus CELT (hybrid), and the server pays for decoding the CELT half only to discard the band
/// above 8 kHz. Measured here: about 20 µs a frame to decode wideband at 24 kbit/s against about
/// 45 µs for fullband at 32 kbit/s (`parley-load codec` shows both).
enum OpusProfile: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// 16 kHz input, 24 kbit/s: what Parley's page and CLI send.
    case wideband
    /// 48 kHz input, 32 kbit/s: what a client that keeps the browser's default rate sends.
    case fullband
    /// 24 kHz input, 24 kbit/s: the server's spoken replies (encoded at complexity 5).
    case reply

    var format: AudioFormat {
        switch self {
        case .wideband: AudioFormat(sampleRate: .hz16000, channels: .mono)
        case .fullband: .voice
        case .reply: AudioFormat(sampleRate: .hz24000, channels: .mono)
        }
    }

    var defaultBitrate: Int {
        switch self {
        case .wideband: 24_000
        case .fullband: 32_000
        case .reply: 24_000
        }
    }

    var sampleRate: Int { format.sampleRate.rawValue }
    /// Samples in one 20 ms frame.
    var frameSamples: Int { sampleRate / 50 }

    var description: String { "\(rawValue) (\(sampleRate / 1000) kHz)" }
}
