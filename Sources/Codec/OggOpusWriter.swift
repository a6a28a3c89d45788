/// Writes an Ogg Opus stream (RFC 7845) packet by packet, as bytes to append to a file: the ID
/// header and the comment header on pages of their own, then the audio, a page for every second of
/// it, so that a file cut short by a crash loses at most the last second. `OggOpusFile` reads what
/// this writes; so do opusinfo and opusdec.
public struct OggOpusWriter: Sendable {
    public let channels: Int
    /// Samples at 48 kHz the decoder drops from the start: the encoder's lookahead.
    public let preSkip: Int
    public let serial: UInt32
    private var sequence: UInt32 = 0
    /// 48 kHz samples of audio in the packets written so far, the pre-skip included (the granule
    /// position of the page they end on, RFC 7845 section 4).
    public private(set) var granulePosition: Int64
    private var lacing: [UInt8] = []
    private var body: [UInt8] = []
    /// Packets waiting for their page.
    private var pending = 0

    /// 50 packets of 20 ms: a page a second, the bound opusenc also keeps to.
    public static let packetsPerPage = 50

    public init(channels: Int, preSkip: Int, serial: UInt32) {
        self.channels = channels
        self.preSkip = preSkip
        self.serial = serial
        granulePosition = Int64(preSkip)
    }

    /// The two header pages (RFC 7845 sections 5.1 and 5.2); `inputRate` is informational.
    /// The comment header names the vendor and nothing else: no tag could carry a secret.
    public mutating func headers(inputRate: Int, vendor: String = "Parley") -> [UInt8] {
        var head = Array("OpusHead".utf8) + [1, UInt8(channels)]
        head.appendLittleEndian(UInt16(clamping: preSkip))
        head.appendLittleEndian(UInt32(clamping: inputRate))
        head.appendLittleEndian(Int16(0))
        head.append(0)  // mapping family 0: mono or stereo, no table
        var tags = Array("OpusTags".utf8)
        tags.appendLittleEndian(UInt32(vendor.utf8.count))
        tags += Array(vendor.utf8)
        tags.appendLittleEndian(UInt32(0))
        return page(packet: head, granule: 0, flags: OggPage.firstFlag) + page(packet: tags, granule: 0, flags: 0)
    }

    /// Adds one packet of `samples48k` samples (per channel, at 48 kHz: 960 for 20 ms); returns the
    /// page this packet found full, else nothing.
    public mutating func append(_ packet: [UInt8], samples48k: Int) -> [UInt8] {
        // A full page goes when the next packet comes, so the stream's last page (flagged end of
        // stream by `finish`) always ends a packet: a page that ends none must not carry a granule
        // position (RFC 7845 section 3), and an empty last page would have to.
        let page = pending >= Self.packetsPerPage || lacing.count > 240 ? flush(last: false) : []
        // Lacing (RFC 3533 section 6): 255s then the remainder, which may be 0.
        var left = packet.count
        while left >= 255 { lacing.append(255); left -= 255 }
        lacing.append(UInt8(left))
        body += packet
        granulePosition += Int64(samples48k)
        pending += 1
        // A page holds at most 255 lacing values; a packet is at most 1,275 bytes (6 values).
        return page
    }

    /// The packets still waiting, on the stream's last page (flagged end of stream).
    public mutating func finish() -> [UInt8] { flush(last: true) }

    private mutating func flush(last: Bool) -> [UInt8] {
        let out = Self.page(lacing: lacing, body: body, headerType: last ? OggPage.lastFlag : 0, granule: pending > 0 ? granulePosition : -1,
                            serial: serial, sequence: sequence)
        sequence += 1
        lacing.removeAll(keepingCapacity: true)
        body.removeAll(keepingCapacity: true)
        pending = 0
        return out
    }

    private mutating func page(packet: [UInt8], granule: Int64, flags: UInt8) -> [UInt8] {
        var lacing: [UInt8] = Array(repeating: 255, count: packet.count / 255)
        lacing.append(UInt8(packet.count % 255))
        defer { sequence += 1 }
        return Self.page(lacing: lacing, body: packet, headerType: flags, granule: granule, serial: serial, sequence: sequence)
    }

    /// One page's bytes (RFC 3533 section 6), its checksum filled in.
    package static func page(lacing: [UInt8], body: [UInt8], headerType: UInt8, granule: Int64, serial: UInt32, sequence: UInt32,
                             version: UInt8 = 0) -> [UInt8] {
        var out = Array("OggS".utf8) + [version, headerType]
        out.reserveCapacity(OggPage.headerBytes + lacing.count + body.count)
        out.appendLittleEndian(granule)
        out.appendLittleEndian(serial)
        out.appendLittleEndian(sequence)
        out += [0, 0, 0, 0, UInt8(lacing.count)]
        out += lacing
        out += body
        let crc = OggPage.crc(out, page: 0..<out.count)
        for i in 0..<4 { out[22 + i] = UInt8(truncatingIfNeeded: crc >> (8 * i)) }
        return out
    }
}
