import Glibc
import Testing
@testable import Codec
import TestSupport

@Suite struct OggOpusFileTests {
    static let sentence = "What is the weather like in Paris"

    /// Twenty "packets" of varied sizes; the parser does not look inside them.
    static let packets: [[UInt8]] = (0..<20).map { i in (0..<(1 + i * 37 % 700)).map { UInt8(truncatingIfNeeded: $0 &+ i) } }

    static func refusal(_ bytes: [UInt8]) -> AudioFileError? {
        do {
            _ = try OggOpusFile(bytes: bytes)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Real speech

    /// opusenc (opus-tools 0.2) writes OpusHead alone on a first page flagged BOS, a padded
    /// OpusTags (764 bytes) alone on the second, then audio pages of up to a second each, the last
    /// flagged EOS with a granule position that trims the final packet.
    @Test(arguments: [20, 10, 60])
    func opusencSpeechParses(frameMs: Int) throws {
        let file = try OggOpusFile.read(path: try SpeechVectors.opus(Self.sentence, frameMs: frameMs))
        let wav = try WAVFile.read(path: try SpeechVectors.wav(Self.sentence))
        #expect(file.channels == 1)
        #expect(file.preSkip == 312)
        #expect(file.inputSampleRate == 22050)
        #expect(file.outputGain == 0)
        #expect(abs(file.duration - wav.duration) < wav.duration * 0.01, "\(file.duration) s against \(wav.duration) s")
        let expectedPackets = file.duration / (Double(frameMs) / 1000)
        #expect(abs(Double(file.packets.count) - expectedPackets) <= 2, "\(file.packets.count) packets")
        #expect(file.packets.allSatisfy { !$0.isEmpty && $0.count <= 1275 * 3 })
    }

    @Test func flippedByteFailsTheCRC() throws {
        let bytes = try FileBytes.read(path: try SpeechVectors.opus(Self.sentence))
        let pages = try OggStreamBuilder.pages(bytes)
        #expect(pages.count >= 4)
        for page in pages {
            // A body byte, then a granule position byte: neither moves the page's framing.
            for position in [page.body.lowerBound + page.body.count / 2, page.offset + 9] {
                var damaged = bytes
                damaged[position] ^= 0x10
                guard case .badPageCRC(let offset, _, _) = Self.refusal(damaged) else {
                    Issue.record("byte \(position) flipped was not a CRC failure")
                    continue
                }
                #expect(offset == page.offset)
            }
        }
    }

    @Test func truncatedFileFailsCleanly() throws {
        let bytes = try FileBytes.read(path: try SpeechVectors.opus(Self.sentence))
        let boundaries = Set(try OggStreamBuilder.pages(bytes).map(\.offset))
        for length in stride(from: 0, to: bytes.count, by: 13) {
            let error = Self.refusal(Array(bytes.prefix(length)))
            switch error {
            case .notOggStream?: #expect(length == 0)
            case .truncatedPage?: #expect(!boundaries.contains(length))
            case .truncatedStream?: #expect(boundaries.contains(length))
            default: Issue.record("cut at \(length): \(String(describing: error))")
            }
        }
    }

    @Test func missingFileIsCannotOpen() {
        #expect(throws: AudioFileError.cannotOpen(path: "/nonexistent/parley.opus", errno: ENOENT)) {
            try OggOpusFile.read(path: "/nonexistent/parley.opus")
        }
    }

    // MARK: Valid streams

    @Test func builtStreamParses() throws {
        let head = OggStreamBuilder.opusHead(channels: 2, preSkip: 3840, inputSampleRate: 16000, outputGain: -256)
        let file = try OggOpusFile(bytes: OggStreamBuilder.opusStream(Self.packets, granule: 3840 + 48000, head: head))
        #expect(file.channels == 2)
        #expect(file.preSkip == 3840)
        #expect(file.inputSampleRate == 16000)
        #expect(file.outputGain == -256)
        #expect(file.packets == Self.packets)
        #expect(file.finalGranulePosition == 51840)
        #expect(file.duration == 1)
    }

    @Test(arguments: [1, 2, 3, 7])
    func packetsContinueAcrossPages(segmentsPerPage: Int) throws {
        let bytes = OggStreamBuilder.opusStream(Self.packets, granule: 960, segmentsPerPage: segmentsPerPage)
        #expect(try OggOpusFile(bytes: bytes).packets == Self.packets)
    }

    /// A packet whose size is a multiple of 255 ends with a lacing value of 0.
    @Test func packetsOfMultiplesOf255AndEmptyPacketsKeepTheirLength() throws {
        let packets: [[UInt8]] = [[], [UInt8](repeating: 1, count: 255), [UInt8](repeating: 2, count: 510), [3]]
        #expect(try OggOpusFile(bytes: OggStreamBuilder.opusStream(packets, granule: 960)).packets == packets)
    }

    @Test func tagsMaySpanPages() throws {
        var builder = OggStreamBuilder()
        builder.append([OggStreamBuilder.opusHead()])
        builder.append([OggStreamBuilder.opusTags(vendor: String(repeating: "v", count: 2000))], segmentsPerPage: 3)
        builder.append(Self.packets, granule: 960, last: true)
        #expect(try OggOpusFile(bytes: builder.bytes).packets == Self.packets)
    }

    @Test func pagesOfOtherStreamsAreSkipped() throws {
        var builder = OggStreamBuilder()
        builder.append([OggStreamBuilder.opusHead()])
        let other = { (sequence: UInt32, flags: UInt8) in
            OggStreamBuilder.page(lacing: [3], body: [9, 9, 9], headerType: flags, granule: 0, serial: 77, sequence: sequence)
        }
        var bytes = builder.bytes + other(0, OggPage.firstFlag)
        builder = OggStreamBuilder(nextSequence: 1)
        builder.append([OggStreamBuilder.opusTags()])
        builder.append(Array(Self.packets.prefix(10)), granule: 480)
        bytes += builder.bytes + other(1, 0)
        var rest = OggStreamBuilder(nextSequence: builder.nextSequence)
        rest.append(Array(Self.packets.dropFirst(10)), granule: 960, last: true)
        bytes += rest.bytes + other(2, OggPage.lastFlag)
        // A chained stream after the last page is not read.
        bytes += OggStreamBuilder.opusStream([[1]], granule: 1)
        let file = try OggOpusFile(bytes: bytes)
        #expect(file.packets == Self.packets)
        #expect(file.finalGranulePosition == 960)
    }

    @Test func opusHeadVersionsWithMajorVersionZeroAreRead() throws {
        for version: UInt8 in [1, 2, 15] {
            let bytes = OggStreamBuilder.opusStream([[1]], granule: 960, head: OggStreamBuilder.opusHead(version: version))
            #expect(try OggOpusFile(bytes: bytes).channels == 1)
        }
    }

    @Test func extraOpusHeadBytesAreIgnored() throws {
        let bytes = OggStreamBuilder.opusStream([[1]], granule: 960, head: OggStreamBuilder.opusHead() + [0, 0, 0])
        #expect(try OggOpusFile(bytes: bytes).preSkip == 312)
    }

    // MARK: Refusals: the page layer

    @Test func nonOggInputIsRefused() {
        #expect(Self.refusal([]) == .notOggStream)
        #expect(Self.refusal(Array("RIFF\0\0\0\0WAVE".utf8)) == .notOggStream)
        #expect(Self.refusal(Array("Ogg".utf8)) == .notOggStream)
        #expect(Self.refusal(Array("OggS".utf8)) == .truncatedPage(offset: 0))
    }

    @Test func junkBetweenPagesIsABadCapturePattern() {
        var builder = OggStreamBuilder()
        builder.append([OggStreamBuilder.opusHead()])
        let firstPage = builder.bytes.count
        builder.append([OggStreamBuilder.opusTags()])
        var bytes = builder.bytes
        bytes.insert(0, at: firstPage)
        #expect(Self.refusal(bytes) == .badCapturePattern(offset: firstPage))
    }

    @Test func onlyOggVersionZeroIsRead() {
        var builder = OggStreamBuilder()
        builder.page(lacing: [19], body: OggStreamBuilder.opusHead(), version: 1)
        #expect(Self.refusal(builder.bytes) == .unsupportedOggVersion(1))
    }

    @Test func reservedHeaderTypeBitsAreRefused() {
        var builder = OggStreamBuilder()
        builder.page(lacing: [19], body: OggStreamBuilder.opusHead(), flags: 0x08)
        #expect(Self.refusal(builder.bytes) == .reservedPageFlags(0x0A, offset: 0))
    }

    @Test func firstPageMustBeginAStream() {
        let page = OggStreamBuilder.page(lacing: [19], body: OggStreamBuilder.opusHead(), headerType: 0, granule: 0, serial: 1, sequence: 0)
        #expect(Self.refusal(page) == .missingBeginningOfStream)
    }

    @Test func aMissingPageIsOutOfSequence() {
        var builder = OggStreamBuilder()
        builder.append([OggStreamBuilder.opusHead()])
        builder.append([OggStreamBuilder.opusTags()])
        builder.nextSequence += 1
        builder.append(Self.packets, granule: 960, last: true)
        #expect(Self.refusal(builder.bytes) == .pageOutOfSequence(expected: 2, found: 3))
    }

    @Test func continuationMustMatchTheOpenPacket() {
        var builder = OggStreamBuilder()
        builder.append([OggStreamBuilder.opusHead()])
        builder.append([OggStreamBuilder.opusTags()])
        let third = builder.bytes.count
        builder.page(lacing: [1], body: [1], granule: 960, last: true, flags: OggPage.continuedFlag)
        #expect(Self.refusal(builder.bytes) == .brokenContinuation(offset: third))

        var open = OggStreamBuilder()
        open.append([OggStreamBuilder.opusHead()])
        open.append([OggStreamBuilder.opusTags()])
        open.page(lacing: [255], body: [UInt8](repeating: 1, count: 255), granule: -1)
        let fourth = open.bytes.count
        let unflagged = OggStreamBuilder.page(lacing: [1], body: [1], headerType: OggPage.lastFlag, granule: 960,
                                              serial: open.serial, sequence: open.nextSequence)
        #expect(Self.refusal(open.bytes + unflagged) == .brokenContinuation(offset: fourth))
    }

    @Test func streamWithoutItsLastPageIsTruncated() {
        var builder = OggStreamBuilder()
        builder.append([OggStreamBuilder.opusHead()])
        builder.append([OggStreamBuilder.opusTags()])
        builder.append(Self.packets, granule: 960)
        #expect(Self.refusal(builder.bytes) == .truncatedStream)
        var open = OggStreamBuilder()
        open.append([OggStreamBuilder.opusHead()])
        open.append([OggStreamBuilder.opusTags()])
        open.page(lacing: [255], body: [UInt8](repeating: 1, count: 255), granule: -1, last: true)
        #expect(Self.refusal(open.bytes) == .truncatedStream)
    }

    @Test func negativeGranulePositionsOtherThanNoPacketAreRefused() {
        #expect(Self.refusal(OggStreamBuilder.opusStream([[1]], granule: -2)) == .invalidGranulePosition(-2))
        #expect(Self.refusal(OggStreamBuilder.opusStream([[1]], granule: -1)) == .invalidGranulePosition(-1))
    }

    @Test func oversizedPacketIsRefused() {
        let huge = [UInt8](repeating: 7, count: OggOpusFile.maxAudioPacketBytes + 1)
        guard case .packetTooLarge(_, let limit)? = Self.refusal(OggStreamBuilder.opusStream([huge], granule: 960)) else {
            Issue.record("a packet over the limit was accepted")
            return
        }
        #expect(limit == OggOpusFile.maxAudioPacketBytes)
        let largest = [UInt8](repeating: 7, count: OggOpusFile.maxAudioPacketBytes)
        #expect(Self.refusal(OggStreamBuilder.opusStream([largest], granule: 960)) == nil)
    }

    // MARK: Refusals: the Ogg Opus headers

    @Test func firstPacketMustBeOpusHead() {
        var head = OggStreamBuilder.opusHead()
        head[7] = UInt8(ascii: "X")
        #expect(Self.refusal(OggStreamBuilder.opusStream([[1]], granule: 960, head: head)) == .missingOpusHead)
        #expect(Self.refusal(OggStreamBuilder.opusStream([[1]], granule: 960, head: [])) == .missingOpusHead)
    }

    @Test func opusHeadFieldsAreChecked() {
        let cases: [([UInt8], AudioFileError)] = [
            (Array(OggStreamBuilder.opusHead().prefix(18)), .malformedOpusHead(reason: "18 bytes, 19 needed")),
            (OggStreamBuilder.opusHead(version: 0), .unsupportedOpusVersion(0)),
            (OggStreamBuilder.opusHead(version: 16), .unsupportedOpusVersion(16)),
            (OggStreamBuilder.opusHead(channels: 0), .unsupportedChannelCount(0)),
            (OggStreamBuilder.opusHead(channels: 3), .unsupportedChannelCount(3)),
            (OggStreamBuilder.opusHead(channels: 6, family: 1) + [4, 2, 0, 4, 1, 2, 3, 5], .unsupportedChannelMapping(family: 1)),
            (OggStreamBuilder.opusHead(family: 255), .unsupportedChannelMapping(family: 255)),
        ]
        for (head, error) in cases {
            #expect(Self.refusal(OggStreamBuilder.opusStream([[1]], granule: 960, head: head)) == error)
        }
    }

    @Test func opusHeadMustBeAloneOnTheFirstPage() {
        var builder = OggStreamBuilder()
        builder.append([OggStreamBuilder.opusHead(), OggStreamBuilder.opusTags()])
        builder.append([[1]], granule: 960, last: true)
        #expect(Self.refusal(builder.bytes) == .headerNotPageAligned(header: "OpusHead"))
        var split = OggStreamBuilder()
        split.page(lacing: [255], body: OggStreamBuilder.opusHead() + [UInt8](repeating: 0, count: 236))
        split.page(lacing: [0], body: [])
        #expect(Self.refusal(split.bytes) == .headerNotPageAligned(header: "OpusHead"))
    }

    @Test func secondPacketMustBeOpusTags() {
        var tags = OggStreamBuilder.opusTags()
        tags[0] = UInt8(ascii: "o")
        #expect(Self.refusal(OggStreamBuilder.opusStream([[1]], granule: 960, tags: tags)) == .missingOpusTags)
    }

    @Test func opusTagsMustEndItsPage() {
        var builder = OggStreamBuilder()
        builder.append([OggStreamBuilder.opusHead()])
        builder.append([OggStreamBuilder.opusTags(), [1]], granule: 960, last: true)
        #expect(Self.refusal(builder.bytes) == .headerNotPageAligned(header: "OpusTags"))
    }

    @Test func streamEndingAfterItsHeadIsTruncated() {
        var builder = OggStreamBuilder()
        builder.append([OggStreamBuilder.opusHead()])
        #expect(Self.refusal(builder.bytes) == .truncatedStream)
    }
}
