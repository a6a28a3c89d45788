/// An error cause, carried by ABORT and ERROR chunks (RFC 9260 section 3.3.10).
package struct SCTPErrorCause: Equatable, Sendable, CustomStringConvertible {
    var code: UInt16
    var info: [UInt8]

    init(code: UInt16, info: [UInt8] = []) {
        self.code = code
        self.info = info
    }

    static let invalidStreamIdentifier: UInt16 = 1
    static let missingMandatoryParameter: UInt16 = 2
    static let staleCookie: UInt16 = 3
    static let outOfResource: UInt16 = 4
    static let unrecognizedChunkType: UInt16 = 6
    static let invalidMandatoryParameter: UInt16 = 7
    static let unrecognizedParameters: UInt16 = 8
    static let noUserData: UInt16 = 9
    static let userInitiatedAbort: UInt16 = 12
    static let protocolViolation: UInt16 = 13

    /// A Protocol Violation cause whose information is a short reason (section 3.3.10.13).
    static func violation(_ reason: String) -> SCTPErrorCause {
        SCTPErrorCause(code: protocolViolation, info: Array(reason.utf8))
    }

    static func list(_ value: inout SCTPReader) throws(SCTPPacketError) -> [SCTPErrorCause] {
        try value.tlvs().map { SCTPErrorCause(code: $0.type, info: $0.value) }
    }

    package var description: String {
        let names: [UInt16: String] = [
            1: "invalid stream identifier", 2: "missing mandatory parameter", 3: "stale cookie",
            4: "out of resource", 5: "unresolvable address", 6: "unrecognized chunk type",
            7: "invalid mandatory parameter", 8: "unrecognized parameters", 9: "no user data",
            10: "cookie received while shutting down", 11: "restart with new addresses",
            12: "user-initiated abort", 13: "protocol violation",
        ]
        let name = names[code] ?? "cause \(code)"
        guard code == Self.protocolViolation || code == Self.userInitiatedAbort,
            let text = String(validating: info.prefix(200), as: UTF8.self), !text.isEmpty
        else { return name }
        return "\(name): \(text)"
    }
}
