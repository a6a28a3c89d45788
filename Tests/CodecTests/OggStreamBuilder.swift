@testable import Codec

/// Writes Ogg pages the way libogg lays them out, so a test can build a valid Ogg Opus stream and
/// break exactly one thing in it.
struct OggStreamBuilder {
    var serial: UInt32
    var nextSequence: UInt32
    private(set) var bytes: [UInt8] = []
    /// The last page ended inside a packet.
    private var packetOpen = false

    /// A builder whose first page has sequence number `nextSequence`: from 1 on, it continues a
    /// stream begun elsewhere.
    init(serial: UInt32 = 0x5041_524C, nextSequence: UInt32 = 0) {
        self.serial = serial
        self.nextSequence = nextSequence
    }

    /// Lays `packets` out over pages of at most `segmentsPerPage` lacing values. Pages where a
    /// packet ends get `granule`, the others -1. The first page of the builder is flagged as the
    /// first of its stream, and the last page of this call as the last when `last` is set.
    mutating func append(_ packets: [[UInt8]], granule: Int64 = 0, segmentsPerPage: Int = 255, last: Bool = false) {
        var segments: [ArraySlice<UInt8>] = []
        for packet in packets {
            for start in stride(from: 0, through: packet.count, by: 255) {
                segments.append(packet[start..<min(start + 255, packet.count)])
            }
        }
        if segments.isEmpty { page(lacing: [], body: [], granule: granule, last: last) }
        for start in stride(from: 0, to: segments.count, by: segmentsPerPage) {
            let chunk = segments[start..<min(start + segmentsPerPage, segments.count)]
            let ends = chunk.contains { $0.count < 255 }
            page(lacing: chunk.map { UInt8($0.count) }, body: chunk.flatMap { $0 },
                 granule: ends ? granule : -1, last: last && start + segmentsPerPage >= segments.count)
        }
    }

    /// Appends one page with the given lacing values and body; `flags` adds to the flags the
    /// builder works out itself.
    mutating func page(
        lacing: [UInt8], body: [UInt8], granule: Int64 = 0, last: Bool = false,
        flags: UInt8 = 0, serial: UInt32? = nil, version: UInt8 = 0
    ) {
        var header = flags
        if packetOpen { header |= OggPage.continuedFlag }
        if nextSequence == 0 { header |= OggPage.firstFlag }
        if last { header |= OggPage.lastFlag }
        bytes += Self.page(lacing: lacing, body: body, headerType: header, granule: granule,
                           serial: serial ?? self.serial, sequence: nextSequence, version: version)
        packetOpen = lacing.last.map { $0 == 255 } ?? packetOpen
        nextSequence += 1
    }

    static func page(
        lacing: [UInt8], body: [UInt8], headerType: UInt8, granule: Int64, serial: UInt32, sequence: UInt32,
        version: UInt8 = 0
    ) -> [UInt8] {
        OggOpusWriter.page(lacing: lacing, body: body, headerType: headerType, granule: granule, serial: serial, sequence: sequence, version: version)
    }

    /// An OpusHead for mapping family 0 (RFC 7845 section 5.1).
    static func opusHead(
        version: UInt8 = 1, channels: UInt8 = 1, preSkip: UInt16 = 312, inputSampleRate: UInt32 = 48000,
        outputGain: Int16 = 0, family: UInt8 = 0
    ) -> [UInt8] {
        var out = Array("OpusHead".utf8) + [version, channels]
        out.appendLittleEndian(preSkip)
        out.appendLittleEndian(inputSampleRate)
        out.appendLittleEndian(outputGain)
        out.append(family)
        return out
    }

    /// An OpusTags with a vendor string and no comments (RFC 7845 section 5.2).
    static func opusTags(vendor: String = "parley tests") -> [UInt8] {
        var out = Array("OpusTags".utf8)
        out.appendLittleEndian(UInt32(vendor.utf8.count))
        out += Array(vendor.utf8)
        out.appendLittleEndian(UInt32(0))
        return out
    }

    /// A whole Ogg Opus stream: headers on their own pages, then `packets` ending at `granule`.
    static func opusStream(
        _ packets: [[UInt8]], granule: Int64, head: [UInt8] = opusHead(), tags: [UInt8] = opusTags(),
        segmentsPerPage: Int = 255
    ) -> [UInt8] {
        var builder = OggStreamBuilder()
        builder.append([head])
        builder.append([tags])
        builder.append(packets, granule: granule, segmentsPerPage: segmentsPerPage, last: true)
        return builder.bytes
    }

    /// The offsets and body ranges of the pages of a valid stream.
    static func pages(_ bytes: [UInt8]) throws -> [OggPage] {
        var reader = OggPageReader(bytes: bytes)
        var pages: [OggPage] = []
        while let page = try reader.next() { pages.append(page) }
        return pages
    }
}
