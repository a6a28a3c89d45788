import Codec
import JSON

/// The spoken turns' audio, made once before the run: a few short questions in every voice
/// `TurnTakingSpeechMaker` has, each kept as the `input_audio_buffer.append` messages that carry
/// it, 100 ms apiece (pcm16, 24 kHz, base64). Every session that speaks a clip sends the same
/// strings, so a thousand speakers cost no more memory than one.
struct SurviveSpeech {
    /// What a person asks a voice assistant in a few seconds. None names a tool (`get_weather`
    /// would be called), so that a spoken reply is always speech.
    static let sentences = [
        "what is the capital of france",
        "tell me a short story about a cat",
        "how far away is the moon",
        "what time does the library open on sunday",
        "can you recommend a good book to read",
    ]

    /// 2,400 samples at 24 kHz: the size of a microphone client's larger appends.
    static let chunkMilliseconds = 100
    static let samplesPerChunk = 24 * chunkMilliseconds

    struct Clip {
        let text: String
        let voice: TurnTakingVoice
        let appends: [String]
        let milliseconds: Int
    }

    let voices: [TurnTakingVoice]
    /// `clips[v][s]`: sentence s in voice v.
    private let clips: [[Clip]]

    /// Makes every sentence in every voice (Piper from `venv`, espeak-ng and flite from PATH).
    init(venv: String, voices: [TurnTakingVoice] = TurnTakingVoice.allCases) throws {
        let maker = try TurnTakingSpeechMaker(venv: venv)
        defer { maker.remove() }
        self.voices = voices
        clips = try voices.map { voice in
            try Self.sentences.map { text in
                let samples = SpeechBounds.trimmed(try maker.say(text, voice))
                guard !samples.isEmpty else { throw LoadFailure("\(voice.description) made no audible speech for \"\(text)\"") }
                return Clip(text: text, voice: voice, appends: Self.appends(samples), milliseconds: samples.count / 24)
            }
        }
    }

    /// Session `slot`'s turn `n` (the first is 1): the voices cycle by session, the sentences by turn.
    func clip(slot: Int, turn n: Int) -> Clip {
        clips[slot % clips.count][(n - 1) % Self.sentences.count]
    }

    var clipCount: Int { clips.count * Self.sentences.count }
    var totalMilliseconds: Int { clips.joined().reduce(0) { $0 + $1.milliseconds } }

    /// The append messages for `samples`, one per 100 ms or less.
    static func appends(_ samples: [Int16]) -> [String] {
        stride(from: 0, to: samples.count, by: samplesPerChunk).map { start in
            let chunk = Array(samples[start..<min(start + samplesPerChunk, samples.count)])
            return #"{"type":"input_audio_buffer.append","audio":"\#(Base64.encode(PCM.littleEndianBytes(chunk)))"}"#
        }
    }

    /// The samples of pcm16 audio a base64 delta carries, without decoding it: four characters for
    /// three bytes, less the padding; two bytes a sample (24 a millisecond at 24 kHz).
    static func samples(inBase64 text: String) -> Int {
        let utf8 = text.utf8
        let padding = utf8.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        return (utf8.count / 4 * 3 - padding) / 2
    }
}
