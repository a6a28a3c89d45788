/// The body INIT and INIT ACK share (RFC 9260 sections 3.3.2 and 3.3.3): the sender's tag,
/// window, stream counts, first TSN, and optional parameters.
struct SCTPInitChunk: Equatable, Sendable {
    var initiateTag: UInt32
    var advertisedWindow: UInt32
    var outboundStreams: UInt16
    var inboundStreams: UInt16
    var initialTSN: UInt32
    var parameters: [SCTPParameter]

    init(initiateTag: UInt32, advertisedWindow: UInt32, outboundStreams: UInt16, inboundStreams: UInt16, initialTSN: UInt32, parameters: [SCTPParameter] = []) {
        self.initiateTag = initiateTag
        self.advertisedWindow = advertisedWindow
        self.outboundStreams = outboundStreams
        self.inboundStreams = inboundStreams
        self.initialTSN = initialTSN
        self.parameters = parameters
    }

    init(value: inout SCTPReader) throws(SCTPPacketError) {
        initiateTag = try value.u32()
        advertisedWindow = try value.u32()
        outboundStreams = try value.u16()
        inboundStreams = try value.u16()
        initialTSN = try value.u32()
        parameters = try value.tlvs().map { SCTPParameter(type: $0.type, value: $0.value) }
    }

    func encodeValue(into writer: inout SCTPWriter) {
        writer.u32(initiateTag)
        writer.u32(advertisedWindow)
        writer.u16(outboundStreams)
        writer.u16(inboundStreams)
        writer.u32(initialTSN)
        for parameter in parameters { writer.tlv(parameter.type, parameter.value) }
    }

    var stateCookie: [UInt8]? {
        parameters.first { $0.type == SCTPParameter.stateCookie }?.value
    }

    /// Whether the sender can take FORWARD TSN (RFC 3758 section 3.3.1) and RE-CONFIG (RFC 6525
    /// section 5.1: listed in Supported Extensions).
    var supportsForwardTSN: Bool {
        parameters.contains { $0.type == SCTPParameter.forwardTSNSupported }
            || supportedExtensions.contains(SCTPChunk.ChunkType.forwardTSN)
    }
    var supportsReconfig: Bool { supportedExtensions.contains(SCTPChunk.ChunkType.reconfig) }

    private var supportedExtensions: [UInt8] {
        parameters.first { $0.type == SCTPParameter.supportedExtensions }?.value ?? []
    }

    /// The parameters this endpoint does not recognise that section 3.2.1 says to report (the
    /// upper two bits of the type: 01 and 11), in order, stopping at the first whose bits say to
    /// stop processing (00 and 01). Reported whole, as the Unrecognized Parameter(s) carry them.
    func unrecognizedParametersToReport() -> [SCTPParameter] {
        var report: [SCTPParameter] = []
        for parameter in parameters where !SCTPParameter.recognized.contains(parameter.type) {
            let action = parameter.type >> 14
            if action & 1 == 1 { report.append(parameter) }
            if action & 2 == 0 { break }
        }
        return report
    }
}

/// An INIT or INIT ACK parameter, kept as type and value.
struct SCTPParameter: Equatable, Sendable {
    var type: UInt16
    var value: [UInt8]

    static let heartbeatInfo: UInt16 = 1
    static let ipv4Address: UInt16 = 5
    static let ipv6Address: UInt16 = 6
    static let stateCookie: UInt16 = 7
    static let unrecognizedParameter: UInt16 = 8
    static let cookiePreservative: UInt16 = 9
    static let hostNameAddress: UInt16 = 11
    static let supportedAddressTypes: UInt16 = 12
    static let supportedExtensions: UInt16 = 0x8008
    static let forwardTSNSupported: UInt16 = 0xC000
    static let adaptationLayerIndication: UInt16 = 0xC006

    /// The types this endpoint understands or deliberately ignores: addresses mean nothing over
    /// DTLS (RFC 8261 section 4), and the cookie preservative only asks for a longer life.
    static let recognized: Set<UInt16> = [
        ipv4Address, ipv6Address, stateCookie, unrecognizedParameter, cookiePreservative, hostNameAddress,
        supportedAddressTypes, supportedExtensions, forwardTSNSupported, adaptationLayerIndication,
    ]

    /// The parameter as it sat in the chunk, padding included: the body of an Unrecognized
    /// Parameter (section 3.3.3.1).
    var tlvBytes: [UInt8] {
        var writer = SCTPWriter()
        writer.tlv(type, value)
        return writer.bytes
    }
}
