@testable import Codec

/// A WAV file, as the mock server's transcription route takes an upload (`MockSpeechRoutes`) and
/// `parley talk --audio` a file. Checks that a file that reads has a format the Opus path carries
/// and no more samples than its bytes hold, that it writes back out to itself, and that a refusal
/// can be described.
enum WAVFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        do {
            let wav = try WAVFile(bytes: bytes)
            precondition(wav.channels == 1 || wav.channels == 2, "\(wav.channels) channels")
            precondition((1...384_000).contains(wav.sampleRate), "\(wav.sampleRate) Hz")
            precondition(wav.samples.count % wav.channels == 0 && wav.samples.count * 2 <= bytes.count, "\(wav.samples.count) samples")
            precondition((try? WAVFile(bytes: wav.encoded())) == wav, "the file does not write back to itself")
        } catch {
            precondition(!error.description.isEmpty)
        }
    }
}
