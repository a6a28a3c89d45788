/// Incremental UTF-8 validation (RFC 3629), fed chunk by chunk so that a text message split over
/// frames or reads fails at the first bad byte, not when the message ends.
struct UTF8Validator {
    /// Continuation bytes still expected for the current code point.
    private var needed: UInt8 = 0
    /// Allowed range of the next continuation byte: narrower right after E0, ED, F0 and F4, which is
    /// how overlong forms, surrogates and code points past U+10FFFF are refused.
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    /// True when the bytes so far end on a code point boundary.
    var isComplete: Bool { needed == 0 }

    /// Returns false at the first byte that cannot be part of valid UTF-8.
    mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        let n = bytes.count
        while i < n {
            if needed == 0 {
                // ASCII fast path, eight bytes at a time.
                while i + 8 <= n, bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                    i += 8
                }
                guard i < n else { break }
                let byte = bytes[i]
                i += 1
                if byte < 0x80 { continue }
                guard begin(byte) else { return false }
            } else {
                let byte = bytes[i]
                i += 1
                guard byte >= lower && byte <= upper else { return false }
                needed -= 1
                lower = 0x80
                upper = 0xBF
            }
        }
        return true
    }

    private mutating func begin(_ byte: UInt8) -> Bool {
        switch byte {
        case 0xC2...0xDF: needed = 1
        case 0xE0: needed = 2; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: needed = 2
        case 0xED: needed = 2; upper = 0x9F
        case 0xF0: needed = 3; lower = 0x90
        case 0xF1...0xF3: needed = 3
        case 0xF4: needed = 3; upper = 0x8F
        default: return false
        }
        return true
    }

    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var validator = UTF8Validator()
        return validator.validate(bytes) && validator.isComplete
    }
}
