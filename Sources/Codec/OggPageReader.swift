/// One Ogg page (RFC 3533 section 6). Its lacing values and body stay in the file's bytes; the
/// ranges say where.
struct OggPage {
    static let continuedFlag: UInt8 = 0x01
    static let firstFlag: UInt8 = 0x02
    static let lastFlag: UInt8 = 0x04
    static let headerBytes = 27

    /// Byte offset of the page in the file, for error messages.
    let offset: Int
    let headerType: UInt8
    /// -1 when no packet ends on this page.
    let granulePosition: Int64
    let serial: UInt32
    let sequence: UInt32
    /// The segment table: one lacing value per byte.
    let lacing: Range<Int>
    let body: Range<Int>

    /// The page's first bytes continue a packet begun on an earlier page.
    var isContinued: Bool { headerType & Self.continuedFlag != 0 }
    /// The first page of its logical stream (BOS).
    var isFirst: Bool { headerType & Self.firstFlag != 0 }
    /// The last page of its logical stream (EOS).
    var isLast: Bool { headerType & Self.lastFlag != 0 }

    /// The page checksum: CRC-32 with polynomial 0x04C11DB7, initial value 0, no reflection and no
    /// final xor, over the whole page with its own CRC field (bytes 22..<26) read as zeros.
    static func crc(_ bytes: [UInt8], page: Range<Int>) -> UInt32 {
        let field = (page.lowerBound + 22)..<(page.lowerBound + 26)
        var crc: UInt32 = 0
        for i in page { crc = crc << 8 ^ crcTable[Int(crc >> 24 ^ (field.contains(i) ? 0 : UInt32(bytes[i])))] }
        return crc
    }

    /// `bytes` with the CRC of every page whose framing still reads made right, so that damaged
    /// bytes get past the page layer to the Ogg Opus checks. For the fuzz tests and the libFuzzer
    /// target (Fuzz/), which would otherwise almost never produce a page that passes its CRC.
    static func repairingCRCs(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        var offset = 0
        while bytes.matches("OggS", at: offset), offset + headerBytes <= bytes.count {
            let lacing = (offset + headerBytes)..<(offset + headerBytes + Int(bytes[offset + 26]))
            guard lacing.upperBound <= bytes.count else { break }
            let end = lacing.upperBound + lacing.reduce(0) { $0 + Int(bytes[$1]) }
            guard end <= bytes.count else { break }
            let sum = crc(bytes, page: offset..<end)
            for i in 0..<4 { bytes[offset + 22 + i] = UInt8(truncatingIfNeeded: sum >> (8 * i)) }
            offset = end
        }
        return bytes
    }

    private static let crcTable: [UInt32] = (0..<256).map { (index: UInt32) in
        var r = index << 24
        for _ in 0..<8 { r = r & 0x8000_0000 != 0 ? r << 1 ^ 0x04C1_1DB7 : r << 1 }
        return r
    }
}

/// Splits a whole Ogg file into pages, checking each page's framing and CRC. It knows nothing of
/// packets or logical streams; `OggOpusFile` follows one stream through the pages.
struct OggPageReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// The next page, or nil at the end of the bytes. The file must start with a page, and pages
    /// must follow each other with nothing between them: a file is not a lossy stream that needs
    /// resynchronisation, so junk means corruption.
    mutating func next() throws(AudioFileError) -> OggPage? {
        guard offset < bytes.count || offset == 0 else { return nil }
        guard bytes.matches("OggS", at: offset) else {
            if offset == 0 { throw .notOggStream }
            // A file cut inside the capture pattern of its next page.
            let rest = bytes[offset...]
            throw rest.count < 4 && "OggS".utf8.starts(with: rest) ? .truncatedPage(offset: offset) : .badCapturePattern(offset: offset)
        }
        guard offset + OggPage.headerBytes <= bytes.count else { throw .truncatedPage(offset: offset) }
        guard bytes[offset + 4] == 0 else { throw .unsupportedOggVersion(bytes[offset + 4]) }
        let lacing = (offset + OggPage.headerBytes)..<(offset + OggPage.headerBytes + Int(bytes[offset + 26]))
        guard lacing.upperBound <= bytes.count else { throw .truncatedPage(offset: offset) }
        let bodySize = lacing.reduce(0) { $0 + Int(bytes[$1]) }
        let body = lacing.upperBound..<(lacing.upperBound + bodySize)
        guard body.upperBound <= bytes.count else { throw .truncatedPage(offset: offset) }
        let stored = bytes.littleEndian(at: offset + 22, as: UInt32.self)
        let computed = OggPage.crc(bytes, page: offset..<body.upperBound)
        guard stored == computed else { throw .badPageCRC(offset: offset, expected: stored, actual: computed) }
        let headerType = bytes[offset + 5]
        guard headerType & ~0x07 == 0 else { throw .reservedPageFlags(headerType, offset: offset) }
        let page = OggPage(
            offset: offset, headerType: headerType,
            granulePosition: bytes.littleEndian(at: offset + 6, as: Int64.self),
            serial: bytes.littleEndian(at: offset + 14, as: UInt32.self),
            sequence: bytes.littleEndian(at: offset + 18, as: UInt32.self),
            lacing: lacing, body: body)
        offset = body.upperBound
        return page
    }
}
