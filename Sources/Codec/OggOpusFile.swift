/// An Ogg Opus file (RFC 7845) read whole: the ID header's fields and the audio packets of the
/// first logical stream, ready for `OpusDecoder`. Pages of other streams are checked and skipped;
/// reading stops at the first stream's last page, so chained streams after it are ignored.
public struct OggOpusFile: Sendable {
    public let channels: Int
    /// Samples at 48 kHz to drop from the start of the decoded audio.
    public let preSkip: Int
    /// The rate of the audio before encoding (informational; 0 when unknown). Opus decodes at 48 kHz.
    public let inputSampleRate: Int
    /// Gain to apply when decoding, in Q7.8 dB.
    public let outputGain: Int16
    public let packets: [[UInt8]]
    /// The granule position of the stream's last page: 48 kHz samples including the pre-skip.
    public let finalGranulePosition: Int64

    public var duration: Double { Double(max(0, finalGranulePosition - Int64(preSkip))) / 48_000 }

    /// An Opus frame is at most 1275 bytes and a packet at most 120 ms, 48 frames (RFC 6716 3.2.5,
    /// 3.4): about 61 KB with framing. Only padding can make a packet bigger, so a larger one is
    /// corrupt or hostile. The bound also covers the ID header (at most 276 bytes).
    static let maxAudioPacketBytes = 64 << 10
    /// OpusTags may carry cover art (RFC 7845 5.2 allows any size); it is checked and dropped.
    static let maxTagsPacketBytes = 16 << 20
    /// Each packet costs an allocation: 1-byte packets would otherwise cost some 25 times the file's
    /// size in memory. 2^20 packets is 5.8 hours at 20 ms.
    static let maxPackets = 1 << 20

    public init(bytes: [UInt8]) throws(AudioFileError) {
        var stream = LogicalStream(bytes: bytes)
        let header = try Self.readHead(&stream)
        try Self.skipTags(&stream)
        var packets: [[UInt8]] = []
        var finalGranule: Int64 = 0
        while let (page, completed) = try stream.nextPage(limit: Self.maxAudioPacketBytes) {
            // -1 means no packet ends on the page; any other negative value is meaningless.
            guard page.granulePosition >= 0 || (page.granulePosition == -1 && completed.isEmpty) else {
                throw .invalidGranulePosition(page.granulePosition)
            }
            if page.granulePosition >= 0 { finalGranule = page.granulePosition }
            guard packets.count + completed.count <= Self.maxPackets else { throw .tooManyPackets(limit: Self.maxPackets) }
            packets += completed
        }
        guard stream.ended, !stream.assembler.isOpen else { throw .truncatedStream }
        channels = header.channels
        preSkip = header.preSkip
        inputSampleRate = header.inputSampleRate
        outputGain = header.outputGain
        self.packets = packets
        finalGranulePosition = finalGranule
    }

    public static func read(path: String) throws(AudioFileError) -> OggOpusFile {
        try OggOpusFile(bytes: FileBytes.read(path: path))
    }

    /// The ID header: the one packet on the stream's first page (RFC 7845 section 3).
    private static func readHead(_ stream: inout LogicalStream) throws(AudioFileError) -> OpusHead {
        guard let (_, completed) = try stream.nextPage(limit: maxAudioPacketBytes) else { throw .missingOpusHead }
        let packet = completed.first ?? stream.assembler.openPacket
        guard packet.matches("OpusHead", at: 0) else { throw .missingOpusHead }
        guard completed.count == 1, !stream.assembler.isOpen else { throw .headerNotPageAligned(header: "OpusHead") }
        return try OpusHead(packet)
    }

    /// The comment header: the next packet, which may span pages but must end its last one. Only
    /// its magic is checked; Parley has no use for the comments.
    private static func skipTags(_ stream: inout LogicalStream) throws(AudioFileError) {
        var completed: [[UInt8]] = []
        while completed.isEmpty {
            guard let (_, packets) = try stream.nextPage(limit: maxTagsPacketBytes) else { throw .truncatedStream }
            completed = packets
        }
        guard completed[0].matches("OpusTags", at: 0) else { throw .missingOpusTags }
        guard completed.count == 1, !stream.assembler.isOpen else { throw .headerNotPageAligned(header: "OpusTags") }
    }
}

/// The fields of an OpusHead packet (RFC 7845 section 5.1) that Parley uses.
private struct OpusHead {
    let channels: Int
    let preSkip: Int
    let inputSampleRate: Int
    let outputGain: Int16

    init(_ packet: [UInt8]) throws(AudioFileError) {
        // Mapping family 0 needs 19 bytes; RFC 7845 asks readers to ignore any extra ones.
        guard packet.count >= 19 else { throw .malformedOpusHead(reason: "\(packet.count) bytes, 19 needed") }
        // The high nibble is the major version: 0 is the only one; 1 to 15 all read the same way.
        guard (1...15).contains(packet[8]) else { throw .unsupportedOpusVersion(packet[8]) }
        guard packet[18] == 0 else { throw .unsupportedChannelMapping(family: packet[18]) }
        guard packet[9] == 1 || packet[9] == 2 else { throw .unsupportedChannelCount(Int(packet[9])) }
        channels = Int(packet[9])
        preSkip = Int(packet.littleEndian(at: 10, as: UInt16.self))
        inputSampleRate = Int(packet.littleEndian(at: 12, as: UInt32.self))
        outputGain = packet.littleEndian(at: 16, as: Int16.self)
    }
}

/// The file's first logical stream, page by page: its serial is taken from the first page, which
/// must open a stream; pages of other serials are skipped; a gap in its page sequence numbers is
/// an error, since a lost page would splice unrelated bytes into a packet.
private struct LogicalStream {
    private let bytes: [UInt8]
    private var reader: OggPageReader
    private var serial: UInt32?
    private var expectedSequence: UInt32 = 0
    private(set) var assembler = PacketAssembler()
    /// The stream's last page has been read.
    private(set) var ended = false

    init(bytes: [UInt8]) {
        self.bytes = bytes
        reader = OggPageReader(bytes: bytes)
    }

    /// The stream's next page and the packets that end on it; nil after its last page, or at the
    /// end of the file.
    mutating func nextPage(limit: Int) throws(AudioFileError) -> (OggPage, [[UInt8]])? {
        while !ended, let page = try reader.next() {
            if serial == nil {
                guard page.isFirst else { throw .missingBeginningOfStream }
                serial = page.serial
                expectedSequence = page.sequence
            }
            guard page.serial == serial else { continue }
            guard page.sequence == expectedSequence else {
                throw .pageOutOfSequence(expected: expectedSequence, found: page.sequence)
            }
            expectedSequence &+= 1
            ended = page.isLast
            return (page, try assembler.append(page, from: bytes, limit: limit))
        }
        return nil
    }
}

/// Joins lacing segments into packets (RFC 3533 section 5): a segment of 255 bytes continues the
/// packet, a shorter one ends it, and a packet still open at the end of a page continues on the
/// next page of its stream.
private struct PacketAssembler {
    private(set) var openPacket: [UInt8] = []
    private(set) var isOpen = false

    /// The packets that end on `page`, each at most `limit` bytes.
    mutating func append(_ page: OggPage, from bytes: [UInt8], limit: Int) throws(AudioFileError) -> [[UInt8]] {
        guard page.isContinued == isOpen else { throw .brokenContinuation(offset: page.offset) }
        var completed: [[UInt8]] = []
        var start = page.body.lowerBound
        var end = start
        for index in page.lacing {
            end += Int(bytes[index])
            guard bytes[index] < 255 else { continue }
            try take(bytes[start..<end], limit: limit)
            completed.append(openPacket)
            openPacket = []
            start = end
        }
        try take(bytes[start..<end], limit: limit)
        isOpen = page.lacing.last.map { bytes[$0] == 255 } ?? isOpen
        return completed
    }

    private mutating func take(_ segment: ArraySlice<UInt8>, limit: Int) throws(AudioFileError) {
        guard openPacket.count + segment.count <= limit else {
            throw .packetTooLarge(bytes: openPacket.count + segment.count, limit: limit)
        }
        openPacket += segment
    }
}
