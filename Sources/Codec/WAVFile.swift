/// A 16-bit PCM WAV file: how test speech arrives from espeak-ng and how decoded audio is saved to
/// be listened to. Samples are interleaved when there are two channels.
///
/// Reading walks the RIFF chunks and skips the ones it does not need (LIST, fact, cue, ...). Two
/// leniencies, both for files written by streaming tools that cannot seek back to fix their header:
/// - The RIFF size is not checked; chunks are walked to the end of the bytes instead.
/// - A `data` chunk declaring a streaming placeholder size (see `streamingPlaceholders`) runs to the
///   end of the file, whole sample frames only. Any other size beyond the file is a truncation.
public struct WAVFile: Equatable, Sendable {
    public var sampleRate: Int
    public var channels: Int
    public var samples: [Int16]

    public var duration: Double {
        guard sampleRate > 0, channels > 0 else { return 0 }
        return Double(samples.count) / Double(channels) / Double(sampleRate)
    }

    public init(sampleRate: Int, channels: Int, samples: [Int16]) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.samples = samples
    }

    /// `data` sizes written before the length is known: 0x7FFFF000 by `espeak-ng --stdout`,
    /// 0xFFFFFFFF by sox and others writing to a pipe.
    static let streamingPlaceholders: Set<UInt32> = [0x7FFF_F000, 0xFFFF_FFFF]

    public init(bytes: [UInt8]) throws(AudioFileError) {
        guard bytes.matches("RIFF", at: 0), bytes.matches("WAVE", at: 8) else { throw .notRIFFWAVE }
        var format: (sampleRate: Int, channels: Int)?
        var offset = 12
        while offset + 8 <= bytes.count {
            let declared = bytes.littleEndian(at: offset + 4, as: UInt32.self)
            let body = offset + 8
            let available = bytes.count - body
            if bytes.matches("data", at: offset) {
                guard let format else { throw .missingChunk(id: "fmt ") }
                let length = try Self.dataLength(declared: declared, available: available, channels: format.channels)
                self.init(sampleRate: format.sampleRate, channels: format.channels,
                          samples: Self.samples(bytes, at: body, byteCount: length))
                return
            }
            guard Int(declared) <= available else {
                throw .truncatedChunk(id: Self.chunkID(bytes, at: offset), declared: Int(declared), available: available)
            }
            if bytes.matches("fmt ", at: offset) { format = try Self.format(bytes, at: body, size: Int(declared)) }
            // Chunks start on even offsets: an odd-sized chunk is followed by one pad byte.
            offset = body + Int(declared) + Int(declared & 1)
        }
        throw .missingChunk(id: format == nil ? "fmt " : "data")
    }

    public static func read(path: String) throws(AudioFileError) -> WAVFile {
        try WAVFile(bytes: FileBytes.read(path: path))
    }

    /// The canonical 44-byte header (RIFF, `fmt ` with PCM format 1, `data`) and the samples.
    /// RIFF sizes are 32-bit: more than 2^31 samples cannot be encoded (and trap).
    public func encoded() -> [UInt8] {
        let dataBytes = UInt32(samples.count * 2)
        var out = [UInt8]()
        out.reserveCapacity(44 + samples.count * 2)
        out += Array("RIFF".utf8)
        out.appendLittleEndian(36 + dataBytes)
        out += Array("WAVEfmt ".utf8)
        out.appendLittleEndian(UInt32(16))
        out.appendLittleEndian(UInt16(1))
        out.appendLittleEndian(UInt16(channels))
        out.appendLittleEndian(UInt32(sampleRate))
        out.appendLittleEndian(UInt32(sampleRate * channels * 2))
        out.appendLittleEndian(UInt16(channels * 2))
        out.appendLittleEndian(UInt16(16))
        out += Array("data".utf8)
        out.appendLittleEndian(dataBytes)
        for sample in samples { out.appendLittleEndian(sample) }
        return out
    }

    public func write(path: String) throws(AudioFileError) {
        try FileBytes.write(encoded(), path: path)
    }

    /// Reads a `fmt ` chunk: PCM, or WAVE_FORMAT_EXTENSIBLE with the PCM subformat; 16 bits, mono
    /// or stereo (what the Opus path carries).
    private static func format(_ bytes: [UInt8], at body: Int, size: Int) throws(AudioFileError) -> (sampleRate: Int, channels: Int) {
        guard size >= 16 else { throw .malformedFormatChunk(size: size) }
        let tag = bytes.littleEndian(at: body, as: UInt16.self)
        let channels = Int(bytes.littleEndian(at: body + 2, as: UInt16.self))
        let sampleRate = Int(bytes.littleEndian(at: body + 4, as: UInt32.self))
        let blockAlign = Int(bytes.littleEndian(at: body + 12, as: UInt16.self))
        let bits = Int(bytes.littleEndian(at: body + 14, as: UInt16.self))
        switch tag {
        case 1: break
        case 0xFFFE:
            guard size >= 40 else { throw .malformedFormatChunk(size: size) }
            guard bytes[(body + 24)..<(body + 40)].elementsEqual(pcmSubformat) else {
                throw .unsupportedWAVFormat(.extensibleSubformat)
            }
        default: throw .unsupportedWAVFormat(.formatTag(tag))
        }
        guard bits == 16 else { throw .unsupportedWAVFormat(.bitsPerSample(bits)) }
        guard channels == 1 || channels == 2 else { throw .unsupportedWAVFormat(.channels(channels)) }
        // Opus's own rates top out at 48 kHz; 384 kHz is the highest rate in common use.
        guard (1...384_000).contains(sampleRate) else { throw .unsupportedWAVFormat(.sampleRate(sampleRate)) }
        guard blockAlign == channels * 2 else { throw .unsupportedWAVFormat(.blockAlign(blockAlign)) }
        return (sampleRate, channels)
    }

    /// KSDATAFORMAT_SUBTYPE_PCM, 00000001-0000-0010-8000-00AA00389B71, as stored (little-endian fields).
    private static let pcmSubformat: [UInt8] = [
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71,
    ]

    private static func dataLength(declared: UInt32, available: Int, channels: Int) throws(AudioFileError) -> Int {
        let frameBytes = channels * 2
        if Int(declared) > available {
            guard streamingPlaceholders.contains(declared) else {
                throw .truncatedChunk(id: "data", declared: Int(declared), available: available)
            }
            return available - available % frameBytes
        }
        guard Int(declared) % frameBytes == 0 else {
            throw .partialSampleFrame(dataBytes: Int(declared), frameBytes: frameBytes)
        }
        return Int(declared)
    }

    private static func samples(_ bytes: [UInt8], at offset: Int, byteCount: Int) -> [Int16] {
        let count = byteCount / 2
        return [Int16](unsafeUninitializedCapacity: count) { buffer, initialized in
            bytes.withUnsafeBytes { raw in
                for i in 0..<count {
                    buffer[i] = Int16(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 2 * i, as: Int16.self))
                }
            }
            initialized = count
        }
    }

    private static func chunkID(_ bytes: [UInt8], at offset: Int) -> String {
        String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self)
    }
}
