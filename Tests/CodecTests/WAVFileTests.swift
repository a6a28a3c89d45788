import Glibc
import Testing
@testable import Codec
import TestSupport

@Suite struct WAVFileTests {
    static let sentence = "What is the weather like in Paris"

    static func samples(_ count: Int, seed: UInt64) -> [Int16] {
        var random = SeededRandom(seed: seed)
        return (0..<count).map { _ in Int16.random(in: .min ... .max, using: &random) }
    }

    /// A RIFF/WAVE file made of the given chunks, each (id, body), padded as RIFF requires.
    static func riff(_ chunks: [(String, [UInt8])]) -> [UInt8] {
        var body = Array("WAVE".utf8)
        for (id, bytes) in chunks {
            body += Array(id.utf8)
            body.appendLittleEndian(UInt32(bytes.count))
            body += bytes
            if bytes.count % 2 == 1 { body.append(0) }
        }
        var out = Array("RIFF".utf8)
        out.appendLittleEndian(UInt32(body.count))
        return out + body
    }

    static func fmt(tag: UInt16 = 1, channels: Int = 1, rate: Int = 16000, bits: Int = 16, blockAlign: Int? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.appendLittleEndian(tag)
        out.appendLittleEndian(UInt16(channels))
        out.appendLittleEndian(UInt32(rate))
        out.appendLittleEndian(UInt32(rate * channels * bits / 8))
        out.appendLittleEndian(UInt16(blockAlign ?? channels * bits / 8))
        out.appendLittleEndian(UInt16(bits))
        return out
    }

    /// WAVE_FORMAT_EXTENSIBLE: the 16 plain bytes, cbSize 22, valid bits, channel mask, subformat.
    static func extensibleFmt(subformatTag: UInt8) -> [UInt8] {
        var out = fmt(tag: 0xFFFE)
        out.appendLittleEndian(UInt16(22))
        out.appendLittleEndian(UInt16(16))
        out.appendLittleEndian(UInt32(4))
        out += [subformatTag, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        return out
    }

    static func data(_ samples: [Int16]) -> [UInt8] {
        var out: [UInt8] = []
        for sample in samples { out.appendLittleEndian(sample) }
        return out
    }

    static func refusal(_ bytes: [UInt8]) -> AudioFileError? {
        do {
            _ = try WAVFile(bytes: bytes)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Round trips

    @Test(arguments: [1, 2])
    func encodingThenParsingIsIdentity(channels: Int) throws {
        let wav = WAVFile(sampleRate: 24000, channels: channels, samples: Self.samples(4800 * channels, seed: 1))
        let bytes = wav.encoded()
        #expect(bytes.count == 44 + wav.samples.count * 2)
        #expect(bytes.littleEndian(at: 4, as: UInt32.self) == UInt32(bytes.count - 8))
        #expect(bytes.matches("data", at: 36))
        let parsed = try WAVFile(bytes: bytes)
        #expect(parsed == wav)
        #expect(parsed.duration == 0.2)
    }

    @Test func emptyFileRoundTrips() throws {
        let wav = WAVFile(sampleRate: 8000, channels: 1, samples: [])
        #expect(try WAVFile(bytes: wav.encoded()) == wav)
        #expect(wav.duration == 0)
    }

    @Test func unknownChunksAreSkipped() throws {
        let samples = Self.samples(100, seed: 2)
        let bytes = Self.riff([
            ("LIST", Array("INFOISFT\u{8}\0\0\0espeak\0\0".utf8)), ("fmt ", Self.fmt()),
            ("fact", [100, 0, 0, 0]), ("data", Self.data(samples)), ("LIST", [1, 2, 3, 4]),
        ])
        #expect(try WAVFile(bytes: bytes) == WAVFile(sampleRate: 16000, channels: 1, samples: samples))
    }

    @Test func oddSizedChunkIsFollowedByAPadByte() throws {
        let samples = Self.samples(10, seed: 3)
        let bytes = Self.riff([("fmt ", Self.fmt()), ("junk", [1, 2, 3, 4, 5]), ("data", Self.data(samples))])
        #expect(bytes.matches("data", at: 12 + 8 + 16 + 8 + 6))
        #expect(try WAVFile(bytes: bytes).samples == samples)
    }

    @Test func extensibleFormatWithPCMSubformatIsRead() throws {
        let samples = Self.samples(10, seed: 4)
        let bytes = Self.riff([("fmt ", Self.extensibleFmt(subformatTag: 1)), ("data", Self.data(samples))])
        #expect(try WAVFile(bytes: bytes).samples == samples)
    }

    /// What `espeak-ng --stdout` writes, which cannot seek back: RIFF size 0x7FFFF024 and data
    /// size 0x7FFFF000. Sox and others use 0xFFFFFFFF. The samples run to the end of the file.
    @Test(arguments: [UInt32(0x7FFF_F000), 0xFFFF_FFFF])
    func streamingPlaceholderSizeReadsToTheEndInWholeFrames(placeholder: UInt32) throws {
        let samples = Self.samples(50, seed: 5)
        var bytes = Self.riff([("fmt ", Self.fmt(channels: 2)), ("data", Self.data(samples))])
        bytes.replaceSubrange(4..<8, with: [0x24, 0xF0, 0xFF, 0x7F])
        bytes.replaceSubrange(40..<44, with: (0..<4).map { UInt8(truncatingIfNeeded: placeholder >> (8 * $0)) })
        bytes += [0x11, 0x22, 0x33]  // a partial trailing frame, as a stream cut anywhere leaves
        let wav = try WAVFile(bytes: bytes)
        #expect(wav.channels == 2)
        #expect(wav.samples == samples)
    }

    @Test func writeThenReadFromDisk() throws {
        let path = "/tmp/parley-wav-test-\(getpid()).wav"
        defer { unlink(path) }
        let wav = WAVFile(sampleRate: 48000, channels: 2, samples: Self.samples(960, seed: 6))
        try wav.write(path: path)
        #expect(try WAVFile.read(path: path) == wav)
    }

    // MARK: Refusals

    @Test func missingFileIsCannotOpen() {
        #expect(throws: AudioFileError.cannotOpen(path: "/nonexistent/parley.wav", errno: ENOENT)) {
            try WAVFile.read(path: "/nonexistent/parley.wav")
        }
    }

    @Test func nonRIFFInputIsRefused() {
        #expect(Self.refusal([]) == .notRIFFWAVE)
        #expect(Self.refusal(Array("RIFF".utf8)) == .notRIFFWAVE)
        #expect(Self.refusal(Array("RIFX\0\0\0\0WAVE".utf8)) == .notRIFFWAVE)
        #expect(Self.refusal(Array("RIFF\u{4}\0\0\0AVI ".utf8)) == .notRIFFWAVE)
        #expect(Self.refusal(Array("OggS\0\u{2}\0\0\0\0\0\0\0\0".utf8)) == .notRIFFWAVE)
    }

    @Test func missingChunksAreNamed() {
        #expect(Self.refusal(Self.riff([])) == .missingChunk(id: "fmt "))
        #expect(Self.refusal(Self.riff([("data", [0, 0]), ("fmt ", Self.fmt())])) == .missingChunk(id: "fmt "))
        #expect(Self.refusal(Self.riff([("fmt ", Self.fmt()), ("LIST", [])])) == .missingChunk(id: "data"))
    }

    @Test func unsupportedFormatsSayWhich() {
        let cases: [([UInt8], AudioFileError)] = [
            (Array(Self.fmt().prefix(14)), .malformedFormatChunk(size: 14)),
            (Self.fmt(tag: 3, bits: 32), .unsupportedWAVFormat(.formatTag(3))),
            (Self.fmt(tag: 0x55), .unsupportedWAVFormat(.formatTag(0x55))),
            (Self.fmt(tag: 0xFFFE), .malformedFormatChunk(size: 16)),
            (Self.extensibleFmt(subformatTag: 3), .unsupportedWAVFormat(.extensibleSubformat)),
            (Self.fmt(bits: 8), .unsupportedWAVFormat(.bitsPerSample(8))),
            (Self.fmt(bits: 24), .unsupportedWAVFormat(.bitsPerSample(24))),
            (Self.fmt(channels: 0), .unsupportedWAVFormat(.channels(0))),
            (Self.fmt(channels: 6), .unsupportedWAVFormat(.channels(6))),
            (Self.fmt(rate: 0), .unsupportedWAVFormat(.sampleRate(0))),
            (Self.fmt(channels: 2, blockAlign: 2), .unsupportedWAVFormat(.blockAlign(2))),
        ]
        for (format, error) in cases {
            #expect(Self.refusal(Self.riff([("fmt ", format), ("data", [0, 0, 0, 0])])) == error)
        }
    }

    @Test func truncatedChunksAreRefused() {
        let whole = Self.riff([("fmt ", Self.fmt()), ("data", Self.data(Self.samples(500, seed: 7)))])
        #expect(Self.refusal(Array(whole.prefix(whole.count - 10))) == .truncatedChunk(id: "data", declared: 1000, available: 990))
        #expect(Self.refusal(Array(whole.prefix(30))) == .truncatedChunk(id: "fmt ", declared: 16, available: 10))
        let list = Self.riff([("LIST", [UInt8](repeating: 0, count: 100)), ("fmt ", Self.fmt())])
        #expect(Self.refusal(Array(list.prefix(60))) == .truncatedChunk(id: "LIST", declared: 100, available: 40))
    }

    @Test func truncationAtEveryLengthIsRefused() {
        let whole = Self.riff([("fmt ", Self.fmt()), ("data", Self.data(Self.samples(20, seed: 8)))])
        for length in 0..<whole.count {
            #expect(Self.refusal(Array(whole.prefix(length))) != nil, "cut at \(length)")
        }
    }

    @Test func dataThatSplitsASampleFrameIsRefused() {
        #expect(Self.refusal(Self.riff([("fmt ", Self.fmt()), ("data", [1, 2, 3])])) == .partialSampleFrame(dataBytes: 3, frameBytes: 2))
        #expect(Self.refusal(Self.riff([("fmt ", Self.fmt(channels: 2)), ("data", [1, 2])])) == .partialSampleFrame(dataBytes: 2, frameBytes: 4))
    }

    @Test func errorsDescribeThemselves() {
        #expect(AudioFileError.unsupportedWAVFormat(.bitsPerSample(8)).description == "unsupported WAV format: 8 bits per sample (only 16)")
        #expect(AudioFileError.cannotOpen(path: "/x", errno: ENOENT).description == "cannot open /x: No such file or directory (errno 2)")
    }

    // MARK: Real speech

    /// `espeak-ng -w` seeks back when it finishes, so its header is exact: a 44-byte canonical
    /// header, RIFF size = file - 8, data size = file - 44, 22,050 Hz mono PCM16.
    @Test func espeakWAVParsesWithAPlausibleDuration() throws {
        let path = try SpeechVectors.wav(Self.sentence)
        let bytes = try FileBytes.read(path: path)
        #expect(bytes.littleEndian(at: 4, as: UInt32.self) == UInt32(bytes.count - 8))
        #expect(bytes.matches("data", at: 36))
        #expect(bytes.littleEndian(at: 40, as: UInt32.self) == UInt32(bytes.count - 44))
        let wav = try WAVFile.read(path: path)
        #expect(wav.sampleRate == 22050)
        #expect(wav.channels == 1)
        #expect(wav.duration > 2.0 && wav.duration < 2.9, "\(wav.duration) s")
        #expect(wav.samples.map { abs(Int($0)) }.max()! > 5000, "speech, not silence")
        #expect(wav.encoded() == bytes)
    }
}
