/// A certificate's SHA-256 fingerprint as SDP's `a=fingerprint` carries it (RFC 8122 section 5):
/// the hash function's name, then the 32 bytes as upper-case hex pairs joined by colons. It is how a
/// WebRTC peer is authenticated: the certificate itself is self-signed, and the handshake's
/// certificate must hash to what the signalled offer said.
package struct DTLSFingerprint: Hashable, Sendable, CustomStringConvertible {
    /// The one hash function offered and accepted here; every browser sends it (RFC 8827 section 6.5
    /// requires SHA-256 support).
    package static let hashFunction = "sha-256"
    package static let length = 32

    package let bytes: [UInt8]

    package init?(bytes: [UInt8]) {
        guard bytes.count == Self.length else { return nil }
        self.bytes = bytes
    }

    /// The value after the hash function's name ("AB:CD:…"). Lower-case hex is accepted too: RFC 8122
    /// section 5 asks for upper case, and refusing a call over a letter's case helps nobody.
    package init?(sdpValue: some StringProtocol) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.length)
        var high: UInt8?
        var expectingColon = false
        for character in sdpValue.utf8 {
            if expectingColon {
                guard character == UInt8(ascii: ":"), bytes.count < Self.length else { return nil }
                expectingColon = false
                continue
            }
            guard let nibble = Self.nibble(character) else { return nil }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
                expectingColon = true
            } else {
                high = nibble
            }
        }
        guard high == nil, expectingColon || bytes.isEmpty else { return nil }
        self.init(bytes: bytes)
    }

    /// "AB:CD:…", as our offer and answer carry it.
    package var sdpValue: String {
        let digits = Array("0123456789ABCDEF".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 3)
        for (index, byte) in bytes.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ":")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The whole attribute value: "sha-256 AB:CD:…".
    package var description: String { "\(Self.hashFunction) \(sdpValue)" }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
