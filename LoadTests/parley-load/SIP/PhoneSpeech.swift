import Codec

/// A recording as a phone line carries it: 8 kHz G.711 µ-law in 20 ms frames of 160 bytes, then
/// `pause` seconds of µ-law silence (0xFF), so that server VAD ends a turn there before the loop
/// starts again. What `calls` sends in JSON on /twilio and `sip` sends as RTP.
struct PhoneSpeech {
    static let frameBytes = 160
    static let silence = [UInt8](repeating: 0xFF, count: frameBytes)

    let frames: [[UInt8]]
    /// Seconds of the recording itself, before the pause.
    let speechSeconds: Double

    init(wav path: String, pause: Double) throws {
        let wav = try WAVFile.read(path: path)
        let mono = stride(from: 0, to: wav.samples.count, by: wav.channels).map { wav.samples[$0] }
        let phone = try Resampler(from: wav.sampleRate, to: G711.sampleRate, quality: .desktop).process(mono)
        let ulaw = G711.encode(phone, .muLaw)
        frames = stride(from: 0, to: ulaw.count - (Self.frameBytes - 1), by: Self.frameBytes).map { Array(ulaw[$0..<($0 + Self.frameBytes)]) }
            + Array(repeating: Self.silence, count: Int((pause * 50).rounded()))
        speechSeconds = Double(phone.count) / Double(G711.sampleRate)
    }
}
