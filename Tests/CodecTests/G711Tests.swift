@testable import Codec
import Glibc
import Testing
import TestSupport

@Suite struct G711Tests {
    static let laws: [G711.Law] = [.muLaw, .aLaw]

    /// The ends of G.711's tables (11/88, tables 2a and 2b), scaled to 16 bits: µ-law decodes to
    /// ±8031 at 14 bits, A-law to ±4032 at 13 bits; nearest zero, µ-law has 0 and ±2 (14-bit),
    /// A-law ±1 (13-bit) and no zero.
    @Test func decodingGivesTheTablesValues() {
        #expect(G711.decode(0x80, .muLaw) == 8031 * 4)
        #expect(G711.decode(0x00, .muLaw) == -8031 * 4)
        #expect(G711.decode(0xFF, .muLaw) == 0)
        #expect(G711.decode(0x7F, .muLaw) == 0)
        #expect(G711.decode(0xFE, .muLaw) == 2 * 4)
        #expect(G711.decode(0x7E, .muLaw) == -2 * 4)
        #expect(G711.decode(0xAA, .aLaw) == 4032 * 8)
        #expect(G711.decode(0x2A, .aLaw) == -4032 * 8)
        #expect(G711.decode(0xD5, .aLaw) == 1 * 8)
        #expect(G711.decode(0x55, .aLaw) == -1 * 8)
    }

    @Test func encodingKnownSamples() {
        // Silence is µ-law 0xFF and A-law 0xD5 (the line's idle pattern); full scale the ends.
        // (The bytes sox writes for these samples.)
        let cases: [(Int16, UInt8, UInt8)] = [
            (0, 0xFF, 0xD5), (.max, 0x80, 0xAA), (.min, 0x00, 0x2A), (1000, 0xCE, 0xFA), (-1000, 0x4E, 0x7A),
            // Rounded to 14 (µ-law) or 13 (A-law) bits first: -2 is still zero, -3 is µ-law's
            // first negative step; µ-law's second step starts at 2, A-law's at 12.
            (-1, 0xFF, 0xD5), (-2, 0xFF, 0xD5), (-3, 0x7E, 0xD5), (2, 0xFE, 0xD5), (11, 0xFD, 0xD5), (12, 0xFD, 0xD4),
        ]
        for (sample, mu, a) in cases {
            #expect(G711.encode(sample, .muLaw) == mu, "µ-law of \(sample)")
            #expect(G711.encode(sample, .aLaw) == a, "A-law of \(sample)")
        }
    }

    /// Every byte decodes to a sample that encodes back to it; µ-law's negative zero (0x7F)
    /// decodes to 0, which encodes as positive zero (0xFF).
    @Test(arguments: laws)
    func everyByteDecodesAndReencodesToItself(law: G711.Law) {
        for byte in UInt8.min...UInt8.max {
            let expected: UInt8 = law == .muLaw && byte == 0x7F ? 0xFF : byte
            #expect(G711.encode(G711.decode(byte, law), law) == expected, "byte \(byte)")
        }
    }

    @Test(arguments: laws)
    func bufferEncodingMatchesTheSampleAtATime(law: G711.Law) {
        let samples = (Int(Int16.min)...Int(Int16.max)).map { Int16($0) }
        let bytes = G711.encode(samples, law)
        #expect(bytes.count == samples.count)
        #expect(bytes == samples.map { G711.encode($0, law) })
        #expect(G711.decode(bytes, law) == bytes.map { G711.decode($0, law) })
    }

    @Test(arguments: laws)
    func encodingIsMonotonic(law: G711.Law) {
        // Larger samples never decode smaller: the quantiser keeps the waveform's order.
        var previous = Int16.min
        for value in Int(Int16.min)...Int(Int16.max) {
            let decoded = G711.decode(G711.encode(Int16(value), law), law)
            #expect(decoded >= previous || value == Int(Int16.min))
            previous = decoded
        }
    }

    /// sox (libsox's g711.c) encodes every 16-bit sample, and decodes every byte, as we do. `-D`:
    /// sox dithers by default when it reduces precision, which would change its bytes.
    @Test(arguments: laws)
    func agreesWithSoxOnEverySampleAndByte(law: G711.Law) throws {
        let encoding = law == .muLaw ? "u-law" : "a-law"
        let directory = try TemporaryDirectory()
        let all = (Int(Int16.min)...Int(Int16.max)).map { Int16($0) }
        try WAVFile(sampleRate: 8000, channels: 1, samples: all).write(path: directory.path("all.wav"))
        let encodeStatus = try Subprocess.run(["sox", "-D", directory.path("all.wav"), "-t", "raw", "-e", encoding, "-b", "8", directory.path("all.g711")])
        try #require(encodeStatus == 0, "sox could not encode (is sox installed? scripts/tools/install-deps.sh)")
        let soxBytes = try FileBytes.read(path: directory.path("all.g711"))
        let ours = G711.encode(all, law)
        #expect(soxBytes.count == ours.count)
        let differing = zip(soxBytes, ours).enumerated().filter { $0.element.0 != $0.element.1 }
        let first = differing.prefix(3).map { "\(all[$0.offset]): sox \($0.element.0), ours \($0.element.1)" }
        #expect(differing.isEmpty, "\(differing.count) samples differ, first \(first)")

        try FileBytes.write(Array(UInt8.min...UInt8.max), path: directory.path("bytes.g711"))
        let decodeStatus = try Subprocess.run(["sox", "-D", "-t", "raw", "-r", "8000", "-c", "1", "-e", encoding, "-b", "8", directory.path("bytes.g711"),
                                               "-t", "wav", "-e", "signed", "-b", "16", directory.path("bytes.wav")])
        try #require(decodeStatus == 0)
        let decoded = try WAVFile.read(path: directory.path("bytes.wav")).samples
        #expect(decoded == (UInt8.min...UInt8.max).map { G711.decode($0, law) })
    }

    /// Speech through G.711 keeps its level and shape: the codec is about 38 dB of SNR (G.711's
    /// companding keeps it roughly constant across levels), far above what recognition needs.
    @Test(arguments: laws)
    func speechSurvivesTheRoundTrip(law: G711.Law) throws {
        let wav = try WAVFile.read(path: try SpeechVectors.wav("What is the weather like in Paris"))
        let speech = try Resampler(from: wav.sampleRate, to: 8000).process(wav.samples)
        let decoded = G711.decode(G711.encode(speech, law), law)
        let error = zip(speech, decoded).map { Int16(clamping: Int($0) - Int($1)) }
        let snr = PCM.dBFS(speech) - PCM.dBFS(error)
        #expect(snr > 30, "SNR \(snr) dB")
    }
}

