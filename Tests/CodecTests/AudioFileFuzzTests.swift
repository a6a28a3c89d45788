import Glibc
import Testing
@testable import Codec
import TestSupport

/// Random, mutated, truncated and spliced files fed to both parsers. Each must parse or throw an
/// `AudioFileError` (typed throws make any other error impossible), never crash or read out of
/// bounds, and a parse must not hold more audio than the input had bytes.
@Suite struct AudioFileFuzzTests {
    /// 200 seeds in `make test`; `make fuzz` sets PARLEY_FUZZ_SEEDS to run many more.
    static let seeds: [UInt64] = Array(1...(getenv("PARLEY_FUZZ_SEEDS").flatMap { UInt64(String(cString: $0)) } ?? 200))

    /// Valid files to damage: opusenc's encoding of real speech, a built Ogg Opus stream whose
    /// packets span pages, and a WAV with an odd-sized unknown chunk.
    static func corpus() throws -> [[UInt8]] {
        let speech = try FileBytes.read(path: try SpeechVectors.opus("What is the weather like in Paris"))
        let built = OggStreamBuilder.opusStream(OggOpusFileTests.packets, granule: 960, segmentsPerPage: 3)
        let wav = WAVFileTests.riff([
            ("fmt ", WAVFileTests.fmt(channels: 2)), ("LIST", [1, 2, 3]),
            ("data", WAVFileTests.data(WAVFileTests.samples(64, seed: 9))),
        ])
        return [speech, built, wav]
    }

    @Test(arguments: seeds)
    func parsersSurviveRandomAndDamagedFiles(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let corpus = try Self.corpus()
        let valid = corpus[Int(seed / 6 % UInt64(corpus.count))]
        let input: [UInt8]
        switch seed % 6 {
        case 0:
            input = random.bytes(Int.random(in: 0..<4096, using: &random))
        case 1:
            // Past the magic numbers, so the chunk walk and the page reader see the random bytes.
            let magic = seed % 12 == 1 ? Array("RIFF\u{FF}\u{FF}\0\0WAVE".utf8) : Array("OggS\0\u{2}".utf8)
            input = magic + random.bytes(Int.random(in: 0..<4096, using: &random))
        case 2:
            input = random.mutate(valid, flips: Int.random(in: 1...16, using: &random))
        case 3:
            // Damage with the CRCs made right again, so it reaches the Ogg Opus checks.
            input = OggPage.repairingCRCs(random.mutate(valid, flips: Int.random(in: 1...8, using: &random)))
        case 4:
            let cut = Array(valid.prefix(Int.random(in: 0...valid.count, using: &random)))
            input = seed % 12 == 4 ? cut : OggPage.repairingCRCs(random.mutate(cut, flips: 2))
        default:
            // A range removed or repeated, as a bad copy or a broken stream writer would leave.
            let a = Int.random(in: 0...valid.count, using: &random)
            let b = Int.random(in: a...valid.count, using: &random)
            input = seed % 12 == 5 ? Array(valid[..<a] + valid[b...]) : Array(valid[..<b] + valid[a...])
        }
        checkWAV(input)
        checkOggOpus(input)
    }

    func checkWAV(_ input: [UInt8]) {
        do {
            let wav = try WAVFile(bytes: input)
            #expect(wav.channels == 1 || wav.channels == 2)
            #expect(wav.samples.count % wav.channels == 0)
            #expect(wav.samples.count * 2 <= input.count)
        } catch {
            #expect(!error.description.isEmpty)
        }
    }

    func checkOggOpus(_ input: [UInt8]) {
        do {
            let file = try OggOpusFile(bytes: input)
            #expect(file.channels == 1 || file.channels == 2)
            #expect(file.packets.allSatisfy { $0.count <= OggOpusFile.maxAudioPacketBytes })
            #expect(file.packets.reduce(0) { $0 + $1.count } <= input.count)
        } catch {
            #expect(!error.description.isEmpty)
        }
    }
}
