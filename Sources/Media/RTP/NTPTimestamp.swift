/// A 64-bit NTP timestamp as RTCP carries it (RFC 3550 section 4): seconds since 1 January 1900 and
/// a binary fraction of a second. Only its middle 32 bits go back to the sender (a report block's
/// LSR), and only differences of those matter, so the wall clock behind it need not be exact.
package struct NTPTimestamp: Sendable, Hashable {
    /// Seconds from 1900 to 1970, the Unix epoch (RFC 868's 2,208,988,800).
    package static let unixEpochOffset: UInt64 = 2_208_988_800

    package var seconds: UInt32
    package var fraction: UInt32

    package init(seconds: UInt32, fraction: UInt32) {
        self.seconds = seconds
        self.fraction = fraction
    }

    /// From a wall-clock time in nanoseconds since the Unix epoch; the seconds wrap in 2036 as
    /// NTP's era 0 does (section 4), which the middle 32 bits carry through.
    package init(unixNanoseconds: UInt64) {
        let (whole, part) = unixNanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        seconds = UInt32(truncatingIfNeeded: whole &+ Self.unixEpochOffset)
        fraction = UInt32(truncatingIfNeeded: (part << 32) / 1_000_000_000)
    }

    package init(raw: UInt64) {
        seconds = UInt32(truncatingIfNeeded: raw >> 32)
        fraction = UInt32(truncatingIfNeeded: raw)
    }

    package var raw: UInt64 { UInt64(seconds) << 32 | UInt64(fraction) }

    /// The compact form (16.16 fixed point) a report block's LSR holds (section 6.4.1).
    package var middle32: UInt32 { UInt32(truncatingIfNeeded: raw >> 16) }
}
