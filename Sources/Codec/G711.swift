/// ITU-T G.711: 8-bit logarithmic PCM at 8 kHz, the telephone network's codec. µ-law (North
/// America, Japan; Twilio's Media Streams) and A-law (the rest of the world) each map a 16-bit
/// sample to one byte and back.
///
/// G.711 (11/88, tables 1 and 2) maps 14-bit (µ-law) and 13-bit (A-law) uniform PCM; a 16-bit
/// sample is first rounded to that width, to the nearest value as sox does (not truncated as Sun's
/// reference g711.c and CPython's audioop do, which gives bytes one level apart from these for
/// samples just below an interval's edge, and a small negative bias).
/// The segment and step then follow the Sun code, which sox shares. Decoding returns the middle
/// of the byte's interval, scaled back to 16 bits; every decoded value encodes back to its byte.
///
/// Decoding is a lookup in a 256-entry table. Encoding computes the segment from the position of
/// the highest set bit, without a search or a table, into a buffer the caller owns.
public enum G711 {
    public enum Law: Sendable, Equatable {
        /// G.711 µ-law: 14-bit linear in, 8 segments with a bias of 33.
        case muLaw
        /// G.711 A-law: 13-bit linear in, 8 segments, every even bit inverted on the wire.
        case aLaw
    }

    /// The rate G.711 is defined at; 160 bytes are 20 ms.
    public static let sampleRate = 8000

    // MARK: Decoding

    /// The 16-bit sample a byte stands for.
    @inline(__always)
    public static func decode(_ byte: UInt8, _ law: Law) -> Int16 {
        switch law {
        case .muLaw: muLawTable[Int(byte)]
        case .aLaw: aLawTable[Int(byte)]
        }
    }

    /// Every byte of `bytes` as a sample.
    public static func decode(_ bytes: UnsafeRawBufferPointer, _ law: Law) -> [Int16] {
        let table = law == .muLaw ? muLawTable : aLawTable
        return table.withUnsafeBufferPointer { table in
            [Int16](unsafeUninitializedCapacity: bytes.count) { out, count in
                for i in 0..<bytes.count { out[i] = table[Int(bytes[i])] }
                count = bytes.count
            }
        }
    }

    public static func decode(_ bytes: [UInt8], _ law: Law) -> [Int16] {
        bytes.withUnsafeBytes { decode($0, law) }
    }

    /// µ-law: the byte is stored inverted; its low nibble is the step within the segment, bits 4-6
    /// the segment, bit 7 the sign (set: positive).
    static let muLawTable: [Int16] = (0...255).map { (byte: Int) -> Int16 in
        let u = ~byte & 0xFF
        let magnitude = (((u & 0x0F) << 3) + 0x84) << ((u & 0x70) >> 4)
        return Int16(u & 0x80 != 0 ? 0x84 - magnitude : magnitude - 0x84)
    }

    /// A-law: even bits are inverted on the wire (XOR 0x55); bit 7 set is positive.
    static let aLawTable: [Int16] = (0...255).map { (byte: Int) -> Int16 in
        let a = byte ^ 0x55
        let segment = (a & 0x70) >> 4
        var magnitude = (a & 0x0F) << 4
        switch segment {
        case 0: magnitude += 8
        case 1: magnitude += 0x108
        default: magnitude = (magnitude + 0x108) << (segment - 1)
        }
        return Int16(a & 0x80 != 0 ? magnitude : -magnitude)
    }

    // MARK: Encoding

    @inline(__always)
    public static func encode(_ sample: Int16, _ law: Law) -> UInt8 {
        switch law {
        case .muLaw: muLaw(sample)
        case .aLaw: aLaw(sample)
        }
    }

    /// Encodes `samples` into the first `samples.count` bytes of `output`, allocating nothing.
    public static func encode(_ samples: UnsafeBufferPointer<Int16>, _ law: Law, into output: UnsafeMutableBufferPointer<UInt8>) {
        precondition(output.count >= samples.count, "G711.encode: \(samples.count) samples need as many bytes, got \(output.count)")
        switch law {
        case .muLaw: for i in 0..<samples.count { output[i] = muLaw(samples[i]) }
        case .aLaw: for i in 0..<samples.count { output[i] = aLaw(samples[i]) }
        }
    }

    public static func encode(_ samples: [Int16], _ law: Law) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: samples.count) { out, count in
            samples.withUnsafeBufferPointer { encode($0, law, into: out) }
            count = samples.count
        }
    }

    /// The bias added to a µ-law magnitude (G.711's 33, at 14 bits), and the highest biased
    /// magnitude: the top of segment 7. Sun's code clips at 8159 before the bias, which lands on a
    /// ninth segment it maps to the top code anyway; capping after the bias gives the same bytes.
    static let muLawBias = 0x21
    static let muLawTop = 0x1FFF

    @inline(__always)
    static func muLaw(_ sample: Int16) -> UInt8 {
        // Rounded to 14 bits; +32767 rounds up to 8192, which the cap below maps to the top code.
        var linear = (Int(sample) + 2) >> 2
        var mask: UInt8 = 0xFF
        if linear < 0 {
            linear = -linear
            mask = 0x7F
        }
        // Biased, the magnitude's highest set bit names its segment: bit 5 or below is
        // segment 0, bit 6 segment 1, ... bit 12 segment 7.
        let biased = min(linear + muLawBias, muLawTop)
        let segment = max(0, Int.bitWidth - biased.leadingZeroBitCount - 6)
        let step = (biased >> (segment + 1)) & 0x0F
        return UInt8(segment << 4 | step) ^ mask
    }

    @inline(__always)
    static func aLaw(_ sample: Int16) -> UInt8 {
        // Rounded to 13 bits, at most 4095 (+32767 would round up past the top segment).
        var linear = min((Int(sample) + 4) >> 3, 4095)
        var mask: UInt8 = 0xD5
        if linear < 0 {
            // One's complement: -1 (just below zero) is the smallest negative level.
            linear = -linear - 1
            mask = 0x55
        }
        // 13-bit magnitudes reach 4095: the highest set bit is at most 11, segment 7. Segments 0
        // and 1 share one step size.
        let segment = max(0, Int.bitWidth - linear.leadingZeroBitCount - 5)
        let step = (linear >> max(1, segment)) & 0x0F
        return UInt8(segment << 4 | step) ^ mask
    }
}
