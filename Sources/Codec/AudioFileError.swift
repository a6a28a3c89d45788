import Glibc

/// Why an audio file could not be read or written: one case per way a file can be wrong, so that a
/// caller (or a test) can tell a missing file from a corrupt page from a format Parley does not take.
public enum AudioFileError: Error, Equatable, CustomStringConvertible {
    // The file itself.
    case cannotOpen(path: String, errno: Int32)
    case cannotRead(path: String, errno: Int32)
    case cannotWrite(path: String, errno: Int32)
    case fileTooLarge(path: String, limit: Int)

    // WAV (RIFF).
    case notRIFFWAVE
    /// A chunk declares more bytes than the file holds.
    case truncatedChunk(id: String, declared: Int, available: Int)
    case missingChunk(id: String)
    /// A `fmt ` chunk too short for the fields its format tag needs.
    case malformedFormatChunk(size: Int)
    case unsupportedWAVFormat(UnsupportedWAVFormat)
    /// The `data` chunk does not hold a whole number of sample frames.
    case partialSampleFrame(dataBytes: Int, frameBytes: Int)

    // Ogg pages (RFC 3533).
    /// The first four bytes are not "OggS".
    case notOggStream
    /// A later page does not start with "OggS".
    case badCapturePattern(offset: Int)
    case unsupportedOggVersion(UInt8)
    /// Header type bits other than continued, first and last page are set.
    case reservedPageFlags(UInt8, offset: Int)
    case badPageCRC(offset: Int, expected: UInt32, actual: UInt32)
    case truncatedPage(offset: Int)
    case pageOutOfSequence(expected: UInt32, found: UInt32)
    /// The first page of the file is not flagged as the first page of a logical stream.
    case missingBeginningOfStream
    /// A page says it continues a packet when none is open, or a packet left open is not continued.
    case brokenContinuation(offset: Int)
    /// The file ends before the stream's last page, or inside a packet.
    case truncatedStream
    case invalidGranulePosition(Int64)
    case packetTooLarge(bytes: Int, limit: Int)
    case tooManyPackets(limit: Int)

    // Ogg Opus (RFC 7845).
    case missingOpusHead
    case malformedOpusHead(reason: String)
    case unsupportedOpusVersion(UInt8)
    case unsupportedChannelCount(Int)
    case unsupportedChannelMapping(family: UInt8)
    case missingOpusTags
    /// RFC 7845 section 3: each header packet ends its page, and OpusHead is alone on the first.
    case headerNotPageAligned(header: String)

    /// Which part of a `fmt ` chunk Parley does not read.
    public enum UnsupportedWAVFormat: Equatable, Sendable {
        /// Neither PCM (1) nor WAVE_FORMAT_EXTENSIBLE (0xFFFE).
        case formatTag(UInt16)
        /// WAVE_FORMAT_EXTENSIBLE whose subformat is not PCM (float, a-law, ...).
        case extensibleSubformat
        case bitsPerSample(Int)
        case channels(Int)
        case sampleRate(Int)
        case blockAlign(Int)
    }

    public var description: String {
        switch self {
        case .cannotOpen(let path, let errno): "cannot open \(path): \(Self.message(errno))"
        case .cannotRead(let path, let errno): "cannot read \(path): \(Self.message(errno))"
        case .cannotWrite(let path, let errno): "cannot write \(path): \(Self.message(errno))"
        case .fileTooLarge(let path, let limit): "\(path) is larger than the \(limit)-byte limit"
        case .notRIFFWAVE: "not a WAV file: no RIFF/WAVE header"
        case .truncatedChunk(let id, let declared, let available):
            "WAV chunk '\(id)' declares \(declared) bytes but only \(available) are present"
        case .missingChunk(let id): "WAV file has no '\(id)' chunk before its samples"
        case .malformedFormatChunk(let size): "WAV 'fmt ' chunk of \(size) bytes is too short"
        case .unsupportedWAVFormat(let format): "unsupported WAV format: \(format.description)"
        case .partialSampleFrame(let dataBytes, let frameBytes):
            "WAV data of \(dataBytes) bytes is not a whole number of \(frameBytes)-byte sample frames"
        case .notOggStream: "not an Ogg stream: the file does not start with \"OggS\""
        case .badCapturePattern(let offset): "Ogg page at byte \(offset) does not start with \"OggS\""
        case .unsupportedOggVersion(let version): "unsupported Ogg page version \(version) (only 0 exists)"
        case .reservedPageFlags(let flags, let offset):
            "Ogg page at byte \(offset) sets reserved header type bits (0x\(String(flags, radix: 16)))"
        case .badPageCRC(let offset, let expected, let actual):
            "Ogg page at byte \(offset) fails its CRC (stored 0x\(String(expected, radix: 16)), computed 0x\(String(actual, radix: 16)))"
        case .truncatedPage(let offset): "Ogg page at byte \(offset) is cut short by the end of the file"
        case .pageOutOfSequence(let expected, let found):
            "Ogg page sequence number \(found) where \(expected) was expected: a page is missing or repeated"
        case .missingBeginningOfStream: "the first Ogg page is not marked as the beginning of a stream"
        case .brokenContinuation(let offset):
            "Ogg page at byte \(offset) breaks packet continuation: a packet is continued that was never started, or one left open is not continued"
        case .truncatedStream: "the Ogg stream ends before its last page"
        case .invalidGranulePosition(let granule): "invalid Ogg granule position \(granule)"
        case .packetTooLarge(let bytes, let limit): "Ogg packet of at least \(bytes) bytes exceeds the \(limit)-byte limit"
        case .tooManyPackets(let limit): "Ogg stream has more than \(limit) packets"
        case .missingOpusHead: "not an Ogg Opus stream: the first packet is not an OpusHead"
        case .malformedOpusHead(let reason): "malformed OpusHead: \(reason)"
        case .unsupportedOpusVersion(let version): "unsupported OpusHead version \(version) (major version 0 is 1 to 15)"
        case .unsupportedChannelCount(let count): "unsupported Opus channel count \(count) (mapping family 0 is mono or stereo)"
        case .unsupportedChannelMapping(let family): "unsupported Opus channel mapping family \(family) (only family 0, mono or stereo)"
        case .missingOpusTags: "the second Ogg Opus packet is not an OpusTags header"
        case .headerNotPageAligned(let header): "the \(header) header does not end its Ogg page"
        }
    }

    private static func message(_ errno: Int32) -> String {
        "\(String(cString: strerror(errno))) (errno \(errno))"
    }
}

extension AudioFileError.UnsupportedWAVFormat: CustomStringConvertible {
    public var description: String {
        switch self {
        case .formatTag(let tag): "format tag 0x\(String(tag, radix: 16)) is not PCM"
        case .extensibleSubformat: "WAVE_FORMAT_EXTENSIBLE subformat is not PCM"
        case .bitsPerSample(let bits): "\(bits) bits per sample (only 16)"
        case .channels(let channels): "\(channels) channels (only 1 or 2)"
        case .sampleRate(let rate): "sample rate \(rate) Hz"
        case .blockAlign(let align): "block align \(align) does not match 16-bit samples"
        }
    }
}
