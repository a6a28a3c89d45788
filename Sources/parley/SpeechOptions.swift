import ArgumentParser
import Models
import Server
import Session
import Speech
import Loop
import Upstream

/// `--transcriber` and friends: how spoken turns become text, and where that work runs.
struct SpeechOptions: ParsableArguments {
    @Option(help: "Speech recognition: pocketsphinx (embedded, the default), openai (any OpenAI-compatible /audio/transcriptions) or none (PARLEY_TRANSCRIBER).")
    var transcriber = Environment.string("PARLEY_TRANSCRIBER") ?? "pocketsphinx"

    @Option(help: "Speech synthesis: espeak-ng (embedded, the default), openai (any OpenAI-compatible /audio/speech) or none (PARLEY_SYNTHESIZER). With one, /ws replies are spoken (Opus), and /v1/realtime replies too when the session asks for audio.")
    var synthesizer = Environment.string("PARLEY_SYNTHESIZER") ?? "espeak-ng"

    @Option(name: .customLong("speech-base-url"), help: "For openai speech: the API's base URL, up to the version (PARLEY_SPEECH_BASE_URL; default https://api.openai.com/v1).")
    var speechBaseURLFlag: String?

    @Option(help: "For --transcriber openai: the model (PARLEY_TRANSCRIPTION_MODEL).")
    var transcriptionModel = Environment.string("PARLEY_TRANSCRIPTION_MODEL") ?? "gpt-4o-mini-transcribe"

    @Option(help: "For --synthesizer openai: the model (PARLEY_SPEECH_MODEL).")
    var speechModel = Environment.string("PARLEY_SPEECH_MODEL") ?? "gpt-4o-mini-tts"

    @Option(help: "For openai speech: the environment variable holding the API key (PARLEY_SPEECH_API_KEY_ENV; default OPENAI_API_KEY).")
    var speechApiKeyEnv = Environment.string("PARLEY_SPEECH_API_KEY_ENV") ?? "OPENAI_API_KEY"

    @Option(help: "Threads for speech work (recognition, synthesis, encoding), off the event loops; default one per core (PARLEY_SPEECH_WORKERS).")
    var speechWorkers = Environment.int("PARLEY_SPEECH_WORKERS") ?? ServerConfiguration().loops

    @Option(help: "Speech jobs that may wait for a worker; past it new turns get an overloaded error (PARLEY_SPEECH_QUEUE).")
    var speechQueue = Environment.int("PARLEY_SPEECH_QUEUE") ?? 64

    @Option(help: "pocketsphinx decoders, each able to follow one speaking turn at a time (about 30 MB each); default three per speech worker (PARLEY_RECOGNIZERS).")
    var recognizers: Int?

    func validate() throws {
        guard ["pocketsphinx", "openai", "none"].contains(transcriber) else { throw ValidationError("--transcriber must be pocketsphinx, openai or none") }
        guard ["espeak-ng", "openai", "none"].contains(synthesizer) else { throw ValidationError("--synthesizer must be espeak-ng, openai or none") }
        if transcriber == "openai" || synthesizer == "openai" { _ = try speechBaseURL() }
        guard (1...256).contains(speechWorkers) else { throw ValidationError("--speech-workers must be 1...256") }
        guard (1...100_000).contains(speechQueue) else { throw ValidationError("--speech-queue must be 1...100000") }
        if let recognizers, !(1...256).contains(recognizers) { throw ValidationError("--recognizers must be 1...256") }
    }

    /// For the listening line: what hears and what speaks.
    var summary: String {
        switch (transcriber, synthesizer) {
        case ("none", "none"): "no speech"
        default: "speech: \(transcriber == "none" ? "no recognition" : transcriber) in, \(synthesizer == "none" ? "text replies" : synthesizer) out"
        }
    }

    /// Starts the workers; recognisers load on first use.
    func makeServices() throws -> SpeechServices {
        guard transcriber != "none" || synthesizer != "none" else { return SpeechServices() }
        let pool = try WorkerPool(name: "parley-speech", threads: speechWorkers, queueLimit: speechQueue)
        let count = recognizers ?? (Environment.int("PARLEY_RECOGNIZERS") ?? 3 * speechWorkers)
        let key = Environment.string(speechApiKeyEnv)
        let transcribing: (any Transcriber)? = switch transcriber {
        case "openai": OpenAITranscriber(baseURL: try speechBaseURL(), model: transcriptionModel, apiKey: key)
        case "pocketsphinx": try SphinxTranscriber(decoders: count, pool: pool)
        default: nil
        }
        let speaking: (any Synthesizer)? = switch synthesizer {
        case "openai": OpenAISynthesizer(baseURL: try speechBaseURL(), model: speechModel, apiKey: key)
        case "espeak-ng": EspeakSynthesizer(pool: pool)
        default: nil
        }
        return SpeechServices(transcriber: transcribing, synthesizer: speaking, pool: pool)
    }

    private func speechBaseURL() throws -> UpstreamURL {
        let text = speechBaseURLFlag ?? Environment.string("PARLEY_SPEECH_BASE_URL") ?? "https://api.openai.com/v1"
        guard let url = UpstreamURL(text) else { throw ValidationError("--speech-base-url \(text) is not an http:// or https:// URL") }
        return url
    }
}
