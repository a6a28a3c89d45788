/// The typed values offer and answer read out of attributes. Each reads only its own syntax and
/// gives nil for text that does not fit it, so a malformed attribute reads as an absent one and
/// the caller's rule (WebRTCOffer's, say) decides whether that is fatal.

/// `a=rtpmap:<payload type> <encoding name>/<clock rate>[/<channels>]` (RFC 8866 section 6.6).
package struct SDPRTPMap: Equatable, Sendable {
    package var payloadType: UInt8
    package var encoding: String
    package var clockRate: UInt32
    package var channels: UInt8?

    package init(payloadType: UInt8, encoding: String, clockRate: UInt32, channels: UInt8? = nil) {
        self.payloadType = payloadType
        self.encoding = encoding
        self.clockRate = clockRate
        self.channels = channels
    }

    package init?(_ value: String) {
        let parts = value.split(separator: " ", maxSplits: 1)
        // RTP payload types are seven bits (RFC 3550 section 5.1).
        guard parts.count == 2, let payloadType = UInt8(parts[0]), payloadType < 128 else { return nil }
        let fields = parts[1].split(separator: "/", omittingEmptySubsequences: false)
        guard fields.count == 2 || fields.count == 3, !fields[0].isEmpty, let clockRate = UInt32(fields[1]) else { return nil }
        var channels: UInt8?
        if fields.count == 3 {
            guard let count = UInt8(fields[2]) else { return nil }
            channels = count
        }
        self.init(payloadType: payloadType, encoding: String(fields[0]), clockRate: clockRate, channels: channels)
    }

    package var attributeValue: String {
        var text = String(payloadType) + " " + encoding + "/" + String(clockRate)
        if let channels { text += "/" + String(channels) }
        return text
    }
}

/// `a=fingerprint:<hash function> <hex bytes separated by colons>` (RFC 8122 section 5): the hash
/// of the certificate the peer's DTLS will present.
package struct SDPFingerprint: Equatable, Sendable {
    /// Lowercased: RFC 8122 names the functions case-insensitively ("sha-256", "SHA-256").
    package var algorithm: String
    package var bytes: [UInt8]

    package init(algorithm: String, bytes: [UInt8]) {
        self.algorithm = algorithm.lowercased()
        self.bytes = bytes
    }

    package init?(_ value: String) {
        let parts = value.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2 else { return nil }
        let pairs = parts[1].split(separator: ":", omittingEmptySubsequences: false)
        // SHA-512's 64 bytes is the longest hash RFC 8122 names.
        guard (1...64).contains(pairs.count) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(pairs.count)
        for pair in pairs {
            guard pair.utf8.count == 2, let byte = UInt8(pair, radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.init(algorithm: String(parts[0]), bytes: bytes)
    }

    /// Upper-case hex, as RFC 8122 section 5's grammar writes it.
    package var attributeValue: String {
        let digits = Array("0123456789ABCDEF".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 3)
        for (index, byte) in bytes.enumerated() {
            if index > 0 { text.append(0x3A) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return algorithm + " " + String(decoding: text, as: UTF8.self)
    }
}

/// `a=setup` (RFC 4145 section 4): which side opens the DTLS association (RFC 8842 section 5).
package enum SDPSetup: String, Equatable, Sendable {
    case active, passive, actpass, holdconn
}

/// The media direction attributes (RFC 8866 section 6.7).
package enum SDPDirection: String, Equatable, Sendable, CaseIterable {
    case sendrecv, sendonly, recvonly, inactive

    /// What an answer says to an offer of this direction (RFC 3264 section 6.1): the offerer's
    /// send is the answerer's receive.
    package var reversed: SDPDirection {
        switch self {
        case .sendrecv: .sendrecv
        case .sendonly: .recvonly
        case .recvonly: .sendonly
        case .inactive: .inactive
        }
    }
}

/// `c=<nettype> <addrtype> <address>` (RFC 8866 section 5.7).
package struct SDPConnection: Equatable, Sendable {
    package var networkType: String
    package var addressType: String
    package var address: String

    package init(networkType: String = "IN", addressType: String, address: String) {
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
    }

    /// IN IP4 or IN IP6, chosen by the address's form.
    package init(address: String) {
        self.init(addressType: address.contains(":") ? "IP6" : "IP4", address: address)
    }

    package init?(_ value: String) {
        let fields = value.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count == 3 else { return nil }
        self.init(networkType: String(fields[0]), addressType: String(fields[1]), address: String(fields[2]))
    }

    package var lineValue: String { networkType + " " + addressType + " " + address }
}

/// `a=group:<semantics> <identification tag> ...` (RFC 5888 section 5), BUNDLE's carrier (RFC 8843).
package struct SDPGroup: Equatable, Sendable {
    package var semantics: String
    package var mids: [String]

    package init(semantics: String, mids: [String]) {
        self.semantics = semantics
        self.mids = mids
    }

    package init?(_ value: String) {
        let fields = value.split(separator: " ", omittingEmptySubsequences: true)
        guard let first = fields.first else { return nil }
        self.init(semantics: String(first), mids: fields.dropFirst().map(String.init))
    }

    package var attributeValue: String { ([semantics] + mids).joined(separator: " ") }
}

/// `a=ssrc:<ssrc> <attribute>[:<value>]` (RFC 5576 section 4.1).
package struct SDPSSRCAttribute: Equatable, Sendable {
    package var ssrc: UInt32
    package var attribute: String
    package var value: String?

    package init(ssrc: UInt32, attribute: String, value: String? = nil) {
        self.ssrc = ssrc
        self.attribute = attribute
        self.value = value
    }

    package init?(_ text: String) {
        let parts = text.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, let ssrc = UInt32(parts[0]) else { return nil }
        let rest = parts[1]
        if let colon = rest.firstIndex(of: ":") {
            self.init(ssrc: ssrc, attribute: String(rest[..<colon]), value: String(rest[rest.index(after: colon)...]))
        } else {
            self.init(ssrc: ssrc, attribute: String(rest))
        }
    }

    package var attributeValue: String {
        var text = String(ssrc) + " " + attribute
        if let value { text += ":" + value }
        return text
    }
}
