/// One chunk of an SCTP packet (RFC 9260 section 3.3, RFC 3758's FORWARD TSN, RFC 6525's
/// RE-CONFIG). Chunks of a type this codec does not know are kept whole as `.unknown`, so that the
/// association can apply the upper-two-bits rule of section 3.2 to them.
enum SCTPChunk: Equatable, Sendable {
    case data(SCTPDataChunk)
    case initiate(SCTPInitChunk)
    case initiateAck(SCTPInitChunk)
    case sack(SCTPSackChunk)
    case heartbeat(info: [UInt8])
    case heartbeatAck(info: [UInt8])
    /// `reflected`: the T bit, set when the packet carries the receiver's own tag (section 8.5.1).
    case abort(reflected: Bool, causes: [SCTPErrorCause])
    case shutdown(cumulativeTSN: UInt32)
    case shutdownAck
    case shutdownComplete(reflected: Bool)
    case error(causes: [SCTPErrorCause])
    case cookieEcho(cookie: [UInt8])
    case cookieAck
    case forwardTSN(SCTPForwardTSNChunk)
    case reconfig([SCTPReconfigParameter])
    case unknown(type: UInt8, flags: UInt8, value: [UInt8])

    enum ChunkType {
        static let data: UInt8 = 0, initiate: UInt8 = 1, initiateAck: UInt8 = 2, sack: UInt8 = 3
        static let heartbeat: UInt8 = 4, heartbeatAck: UInt8 = 5, abort: UInt8 = 6, shutdown: UInt8 = 7
        static let shutdownAck: UInt8 = 8, error: UInt8 = 9, cookieEcho: UInt8 = 10, cookieAck: UInt8 = 11
        static let shutdownComplete: UInt8 = 14, reconfig: UInt8 = 130, forwardTSN: UInt8 = 192
    }

    /// The Heartbeat Info parameter's type (section 3.3.5).
    static let heartbeatInfoType: UInt16 = 1

    /// Parses a chunk's value (the bytes after its 4-byte header, without padding).
    init(type: UInt8, flags: UInt8, value: inout SCTPReader) throws(SCTPPacketError) {
        switch type {
        case ChunkType.data:
            self = .data(try SCTPDataChunk(flags: flags, value: &value))
        case ChunkType.initiate:
            self = .initiate(try SCTPInitChunk(value: &value))
        case ChunkType.initiateAck:
            self = .initiateAck(try SCTPInitChunk(value: &value))
        case ChunkType.sack:
            self = .sack(try SCTPSackChunk(value: &value))
        case ChunkType.heartbeat, ChunkType.heartbeatAck:
            // The chunk holds one Heartbeat Info parameter whose body the sender chose.
            guard let info = try value.tlvs().first(where: { $0.type == Self.heartbeatInfoType }) else {
                throw .malformedChunk(type: type)
            }
            self = type == ChunkType.heartbeat ? .heartbeat(info: info.value) : .heartbeatAck(info: info.value)
        case ChunkType.abort:
            self = .abort(reflected: flags & 1 != 0, causes: try SCTPErrorCause.list(&value))
        case ChunkType.shutdown:
            self = .shutdown(cumulativeTSN: try value.u32())
        case ChunkType.shutdownAck:
            self = .shutdownAck
        case ChunkType.shutdownComplete:
            self = .shutdownComplete(reflected: flags & 1 != 0)
        case ChunkType.error:
            self = .error(causes: try SCTPErrorCause.list(&value))
        case ChunkType.cookieEcho:
            self = .cookieEcho(cookie: value.rest())
        case ChunkType.cookieAck:
            self = .cookieAck
        case ChunkType.forwardTSN:
            self = .forwardTSN(try SCTPForwardTSNChunk(value: &value))
        case ChunkType.reconfig:
            self = .reconfig(try value.tlvs().map { item throws(SCTPPacketError) in try SCTPReconfigParameter(type: item.type, value: item.value) })
        default:
            self = .unknown(type: type, flags: flags, value: value.rest())
        }
    }

    /// Appends the chunk, its header and padding.
    func encode(into writer: inout SCTPWriter) {
        let start = writer.bytes.count
        var type: UInt8 = 0, flags: UInt8 = 0
        writer.u32(0)  // the header, filled in below once the length is known
        switch self {
        case .data(let chunk):
            type = ChunkType.data
            flags = chunk.flags
            chunk.encodeValue(into: &writer)
        case .initiate(let chunk):
            type = ChunkType.initiate
            chunk.encodeValue(into: &writer)
        case .initiateAck(let chunk):
            type = ChunkType.initiateAck
            chunk.encodeValue(into: &writer)
        case .sack(let chunk):
            type = ChunkType.sack
            chunk.encodeValue(into: &writer)
        case .heartbeat(let info):
            type = ChunkType.heartbeat
            writer.tlv(Self.heartbeatInfoType, info)
        case .heartbeatAck(let info):
            type = ChunkType.heartbeatAck
            writer.tlv(Self.heartbeatInfoType, info)
        case .abort(let reflected, let causes):
            type = ChunkType.abort
            flags = reflected ? 1 : 0
            for cause in causes { writer.tlv(cause.code, cause.info) }
        case .shutdown(let cumulativeTSN):
            type = ChunkType.shutdown
            writer.u32(cumulativeTSN)
        case .shutdownAck:
            type = ChunkType.shutdownAck
        case .shutdownComplete(let reflected):
            type = ChunkType.shutdownComplete
            flags = reflected ? 1 : 0
        case .error(let causes):
            type = ChunkType.error
            for cause in causes { writer.tlv(cause.code, cause.info) }
        case .cookieEcho(let cookie):
            type = ChunkType.cookieEcho
            writer.append(cookie.prefix(Int(UInt16.max) - 4))
        case .cookieAck:
            type = ChunkType.cookieAck
        case .forwardTSN(let chunk):
            type = ChunkType.forwardTSN
            chunk.encodeValue(into: &writer)
        case .reconfig(let parameters):
            type = ChunkType.reconfig
            for parameter in parameters { parameter.encode(into: &writer) }
        case .unknown(let unknownType, let unknownFlags, let value):
            type = unknownType
            flags = unknownFlags
            writer.append(value.prefix(Int(UInt16.max) - 4))
        }
        // The length excludes the final padding (section 3.2); values are bounded above, so it fits.
        let length = writer.bytes.count - start
        writer.bytes[start] = type
        writer.bytes[start + 1] = flags
        writer.setU16(UInt16(clamping: length), at: start + 2)
        writer.pad()
    }

    /// The chunk's type byte.
    var type: UInt8 {
        switch self {
        case .data: ChunkType.data
        case .initiate: ChunkType.initiate
        case .initiateAck: ChunkType.initiateAck
        case .sack: ChunkType.sack
        case .heartbeat: ChunkType.heartbeat
        case .heartbeatAck: ChunkType.heartbeatAck
        case .abort: ChunkType.abort
        case .shutdown: ChunkType.shutdown
        case .shutdownAck: ChunkType.shutdownAck
        case .shutdownComplete: ChunkType.shutdownComplete
        case .error: ChunkType.error
        case .cookieEcho: ChunkType.cookieEcho
        case .cookieAck: ChunkType.cookieAck
        case .forwardTSN: ChunkType.forwardTSN
        case .reconfig: ChunkType.reconfig
        case .unknown(let type, _, _): type
        }
    }
}

/// A DATA chunk (section 3.3.1).
struct SCTPDataChunk: Equatable, Sendable {
    var tsn: UInt32
    var stream: UInt16
    var ssn: UInt16
    var ppid: UInt32
    var unordered: Bool
    /// B and E: the first and last fragment of a user message (section 6.9).
    var beginning: Bool
    var ending: Bool
    /// I: the sender asks for an immediate SACK (RFC 7053).
    var immediate: Bool = false
    var userData: [UInt8]

    static let headerBytes = 16

    var flags: UInt8 {
        (immediate ? 8 : 0) | (unordered ? 4 : 0) | (beginning ? 2 : 0) | (ending ? 1 : 0)
    }

    init(tsn: UInt32, stream: UInt16, ssn: UInt16, ppid: UInt32, unordered: Bool, beginning: Bool, ending: Bool, immediate: Bool = false, userData: [UInt8]) {
        self.tsn = tsn
        self.stream = stream
        self.ssn = ssn
        self.ppid = ppid
        self.unordered = unordered
        self.beginning = beginning
        self.ending = ending
        self.immediate = immediate
        self.userData = userData
    }

    init(flags: UInt8, value: inout SCTPReader) throws(SCTPPacketError) {
        tsn = try value.u32()
        stream = try value.u16()
        ssn = try value.u16()
        ppid = try value.u32()
        immediate = flags & 8 != 0
        unordered = flags & 4 != 0
        beginning = flags & 2 != 0
        ending = flags & 1 != 0
        userData = value.rest()
    }

    func encodeValue(into writer: inout SCTPWriter) {
        writer.u32(tsn)
        writer.u16(stream)
        writer.u16(ssn)
        writer.u32(ppid)
        writer.append(userData.prefix(Int(UInt16.max) - Self.headerBytes))
    }
}

/// A SACK chunk (section 3.3.4). Gap blocks are offsets from the cumulative TSN.
struct SCTPSackChunk: Equatable, Sendable {
    struct GapBlock: Equatable, Sendable {
        var start: UInt16
        var end: UInt16
    }

    var cumulativeTSN: UInt32
    var advertisedWindow: UInt32
    var gapBlocks: [GapBlock]
    var duplicateTSNs: [UInt32]

    init(cumulativeTSN: UInt32, advertisedWindow: UInt32, gapBlocks: [GapBlock] = [], duplicateTSNs: [UInt32] = []) {
        self.cumulativeTSN = cumulativeTSN
        self.advertisedWindow = advertisedWindow
        self.gapBlocks = gapBlocks
        self.duplicateTSNs = duplicateTSNs
    }

    init(value: inout SCTPReader) throws(SCTPPacketError) {
        cumulativeTSN = try value.u32()
        advertisedWindow = try value.u32()
        let gaps = Int(try value.u16())
        let duplicates = Int(try value.u16())
        // The counts must match the chunk's length; checking first bounds what is allocated.
        guard value.remaining == gaps * 4 + duplicates * 4 else { throw .malformedChunk(type: SCTPChunk.ChunkType.sack) }
        gapBlocks = []
        gapBlocks.reserveCapacity(gaps)
        for _ in 0..<gaps { gapBlocks.append(GapBlock(start: try value.u16(), end: try value.u16())) }
        duplicateTSNs = []
        duplicateTSNs.reserveCapacity(duplicates)
        for _ in 0..<duplicates { duplicateTSNs.append(try value.u32()) }
    }

    func encodeValue(into writer: inout SCTPWriter) {
        // At most what a 16-bit chunk length holds: (65,535 - 16) / 4 entries.
        let gaps = gapBlocks.prefix(16_379), duplicates = duplicateTSNs.prefix(16_379 - gaps.count)
        writer.u32(cumulativeTSN)
        writer.u32(advertisedWindow)
        writer.u16(UInt16(gaps.count))
        writer.u16(UInt16(duplicates.count))
        for block in gaps { writer.u16(block.start); writer.u16(block.end) }
        for tsn in duplicates { writer.u32(tsn) }
    }
}

/// A FORWARD TSN chunk (RFC 3758 section 3.2): the receiver moves its cumulative TSN on and
/// skips the listed streams' sequence numbers up to the given ones.
struct SCTPForwardTSNChunk: Equatable, Sendable {
    struct Skipped: Equatable, Sendable {
        var stream: UInt16
        var ssn: UInt16
    }

    var newCumulativeTSN: UInt32
    var skipped: [Skipped]

    init(newCumulativeTSN: UInt32, skipped: [Skipped] = []) {
        self.newCumulativeTSN = newCumulativeTSN
        self.skipped = skipped
    }

    init(value: inout SCTPReader) throws(SCTPPacketError) {
        newCumulativeTSN = try value.u32()
        guard value.remaining % 4 == 0 else { throw .malformedChunk(type: SCTPChunk.ChunkType.forwardTSN) }
        skipped = []
        while !value.isAtEnd { skipped.append(Skipped(stream: try value.u16(), ssn: try value.u16())) }
    }

    func encodeValue(into writer: inout SCTPWriter) {
        writer.u32(newCumulativeTSN)
        for entry in skipped.prefix(16_381) { writer.u16(entry.stream); writer.u16(entry.ssn) }
    }
}
