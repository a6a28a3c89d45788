import Codec
import Testing
import TestSupport

/// Real speech, made at test time: espeak-ng says a sentence, opusenc encodes it. What Parley
/// decodes must last as long as the source, be as loud, and follow its loudness contour.
@Suite struct SpeechRoundTripTests {
    static let sentence = "What is the weather like in Paris"

    /// The source at 48 kHz, as the decoder's output is.
    func source48k() throws -> [Int16] {
        let wav = try WAVFile.read(path: try SpeechVectors.wav(Self.sentence))
        return try Resampler(from: wav.sampleRate, to: 48000, quality: .desktop).process(wav.samples)
    }

    func expectSimilar(_ decoded: [Int16], to source: [Int16]) {
        let seconds = Double(decoded.count) / 48000, expected = Double(source.count) / 48000
        #expect(abs(seconds - expected) < 0.03, "decoded \(seconds) s, source \(expected) s")
        let level = PCM.dBFS(decoded) - PCM.dBFS(source)
        #expect(abs(level) < 2, "level differs by \(level) dB")
        // Loudness contours in 10 ms windows, allowing up to 30 ms of alignment difference.
        let shape = Signals.bestEnvelopeCorrelation(decoded, source, window: 480, maxLag: 3)
        #expect(shape > 0.9, "envelope correlation \(shape)")
    }

    @Test func opusencSpeechDecodesLikeItsSource() throws {
        let file = try OggOpusFile.read(path: try SpeechVectors.opus(Self.sentence))
        #expect(file.channels == 1)
        let decoder = try OpusDecoder(format: .voice)
        var pcm: [Int16] = []
        for packet in file.packets { pcm += try decoder.decode(packet) }
        // RFC 7845 section 4.2: drop the pre-skip, and end at the final granule position.
        let end = Int(file.finalGranulePosition)
        let decoded = Array(pcm[file.preSkip..<min(pcm.count, end)])
        expectSimilar(decoded, to: try source48k())
    }

    @Test func parleysEncoderRoundTripsSpeech() throws {
        let source = try source48k()
        let encoder = try OpusEncoder(settings: .init(bitrate: 24_000, complexity: 5))
        let decoder = try OpusDecoder()
        var decoded: [Int16] = []
        for start in stride(from: 0, to: source.count - 959, by: 960) {
            decoded += try decoder.decode(try encoder.encode(Array(source[start..<(start + 960)])))
        }
        // The encoder's lookahead delays its output; line it up with the source.
        let aligned = Array(decoded.dropFirst(encoder.lookahead))
        expectSimilar(aligned, to: Array(source.prefix(aligned.count)))
    }
}
