import ArgumentParser
import Server
import Session
import Speech

/// `--transcriber` and friends: how spoken turns become text, and where that work runs.
struct SpeechOptions: ParsableArguments {
    @Option(help: "Speech recognition: pocketsphinx (embedded, the default) or none (PARLEY_TRANSCRIBER).")
    var transcriber = Environment.string("PARLEY_TRANSCRIBER") ?? "pocketsphinx"

    @Option(help: "Speech synthesis: espeak-ng (embedded, the default) or none (PARLEY_SYNTHESIZER). With one, /ws replies are spoken (Opus), and /v1/realtime replies too when the session asks for audio.")
    var synthesizer = Environment.string("PARLEY_SYNTHESIZER") ?? "espeak-ng"

    @Option(help: "Threads for speech work (recognition, synthesis, encoding), off the event loops; default one per core (PARLEY_SPEECH_WORKERS).")
    var speechWorkers = Environment.int("PARLEY_SPEECH_WORKERS") ?? ServerConfiguration().loops

    @Option(help: "Speech jobs that may wait for a worker; past it new turns get an overloaded error (PARLEY_SPEECH_QUEUE).")
    var speechQueue = Environment.int("PARLEY_SPEECH_QUEUE") ?? 64

    @Option(help: "pocketsphinx decoders, each able to follow one speaking turn at a time (about 30 MB each); default three per speech worker (PARLEY_RECOGNIZERS).")
    var recognizers: Int?

    func validate() throws {
        guard ["pocketsphinx", "none"].contains(transcriber) else { throw ValidationError("--transcriber must be pocketsphinx or none") }
        guard ["espeak-ng", "none"].contains(synthesizer) else { throw ValidationError("--synthesizer must be espeak-ng or none") }
        guard (1...256).contains(speechWorkers) else { throw ValidationError("--speech-workers must be 1...256") }
        guard (1...100_000).contains(speechQueue) else { throw ValidationError("--speech-queue must be 1...100000") }
        if let recognizers, !(1...256).contains(recognizers) { throw ValidationError("--recognizers must be 1...256") }
    }

    /// Starts the workers; recognisers load on first use.
    func makeServices() throws -> SpeechServices {
        guard transcriber != "none" || synthesizer != "none" else { return SpeechServices() }
        let pool = try WorkerPool(name: "parley-speech", threads: speechWorkers, queueLimit: speechQueue)
        let count = recognizers ?? (Environment.int("PARLEY_RECOGNIZERS") ?? 3 * speechWorkers)
        return SpeechServices(transcriber: transcriber == "none" ? nil : try SphinxTranscriber(decoders: count, pool: pool),
                              synthesizer: synthesizer == "none" ? nil : EspeakSynthesizer(pool: pool),
                              pool: pool)
    }
}
