/// An SCTP packet (RFC 9260 section 3): the common header and its chunks. In WebRTC it is the
/// plaintext of one DTLS record (RFC 8261 section 4), so it is at most `maxBytes` long.
struct SCTPPacket: Equatable, Sendable {
    var sourcePort: UInt16
    var destinationPort: UInt16
    var verificationTag: UInt32
    var chunks: [SCTPChunk]

    /// A DTLS record's plaintext is at most 2^14 bytes (RFC 6347 section 4.1.1), but a record
    /// layer may carry more after reassembly; 64 KiB bounds what anyone sends.
    static let maxBytes = 65_536
    static let headerBytes = 12

    init(sourcePort: UInt16, destinationPort: UInt16, verificationTag: UInt32, chunks: [SCTPChunk]) {
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
        self.verificationTag = verificationTag
        self.chunks = chunks
    }

    /// Parses and checks a packet. The checksum is CRC-32C over the whole packet with its field
    /// zeroed (RFC 9260 appendix A); a packet that fails it is discarded (section 6.8).
    init(parsing bytes: [UInt8]) throws(SCTPPacketError) {
        guard bytes.count <= Self.maxBytes else { throw .tooLong(bytes.count) }
        guard bytes.count >= Self.headerBytes + 4 else { throw .truncated }
        var reader = SCTPReader(bytes)
        sourcePort = try reader.u16()
        destinationPort = try reader.u16()
        verificationTag = try reader.u32()
        let stored = UInt32(bytes[8]) | UInt32(bytes[9]) << 8 | UInt32(bytes[10]) << 16 | UInt32(bytes[11]) << 24
        guard stored == Self.checksum(bytes) else { throw .badChecksum }
        reader.skip(4)
        var chunks: [SCTPChunk] = []
        while !reader.isAtEnd {
            let start = reader.offset
            let type = try reader.u8()
            let flags = try reader.u8()
            let length = Int(try reader.u16())
            // A chunk's length counts its 4-byte header; less is malformed and would loop forever.
            guard length >= 4 else { throw .badChunkLength(type: type) }
            guard start + length <= bytes.count else { throw .chunkPastPacket(type: type) }
            var value = SCTPReader(bytes, from: start + 4, to: start + length)
            chunks.append(try SCTPChunk(type: type, flags: flags, value: &value))
            reader.skip(length - 4 + SCTPWriter.padding(length))
        }
        guard !chunks.isEmpty else { throw .noChunks }
        self.chunks = chunks
    }

    /// The packet's bytes, checksum included.
    func encoded() -> [UInt8] {
        var writer = SCTPWriter(capacity: 256)
        writer.u16(sourcePort)
        writer.u16(destinationPort)
        writer.u32(verificationTag)
        writer.u32(0)
        for chunk in chunks { chunk.encode(into: &writer) }
        Self.setChecksum(&writer.bytes)
        return writer.bytes
    }

    /// Writes the CRC-32C of `bytes` into its checksum field, least significant byte first: the
    /// reflected CRC's natural order, which is how RFC 9260 appendix A's example stores it.
    static func setChecksum(_ bytes: inout [UInt8]) {
        guard bytes.count >= headerBytes else { return }
        let crc = checksum(bytes)
        for i in 0..<4 { bytes[8 + i] = UInt8(truncatingIfNeeded: crc >> (8 * i)) }
    }

    /// CRC-32C of the packet with its checksum field taken as zero.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        CRC32.castagnoli.checksum(bytes.indices.lazy.map { $0 >= 8 && $0 < 12 ? 0 : bytes[$0] })
    }
}

/// Why bytes are not an SCTP packet.
enum SCTPPacketError: Error, Equatable, CustomStringConvertible {
    case truncated
    case tooLong(Int)
    case badChecksum
    case noChunks
    case badChunkLength(type: UInt8)
    case chunkPastPacket(type: UInt8)
    case badParameterLength
    case parameterPastChunk
    case malformedChunk(type: UInt8)

    var description: String {
        switch self {
        case .truncated: "the packet ends inside a field"
        case .tooLong(let count): "a \(count)-byte packet is over the 64 KiB bound"
        case .badChecksum: "the CRC-32C checksum does not match"
        case .noChunks: "the packet carries no chunk"
        case .badChunkLength(let type): "chunk type \(type) has a length under its 4-byte header"
        case .chunkPastPacket(let type): "chunk type \(type) runs past the end of the packet"
        case .badParameterLength: "a parameter or error cause has a length under 4"
        case .parameterPastChunk: "a parameter or error cause runs past the end of its chunk"
        case .malformedChunk(let type): "chunk type \(type) is malformed"
        }
    }
}
