import Media
@testable import WebRTC

/// A datagram on a WebRTC port that starts like STUN, as the loop's UDP port hands it to a call's
/// ICE-lite agent. Checks that what parses writes back to bytes no longer than the input that parse
/// to the same message, that a refusal can be described, that the username prefix lies inside the
/// datagram, and that the agent answers at most one datagram, itself STUN with a valid FINGERPRINT.
///
/// The agent's credentials are RFC 5769's (ufrag "evtj", password "VOkJxbRl1RmTxUk/WvJxBt"), so
/// the seeds' checks authenticate; and a request that parses is fed again re-signed under that
/// password (as OggFuzz repairs CRCs), so mutations reach the 420, 487 and nomination paths behind
/// MESSAGE-INTEGRITY.
enum STUNFuzz {
    private static let local = ICECredentials(ufrag: "evtj", password: "VOkJxbRl1RmTxUk/WvJxBt")
    private static let remote = ICECredentials(ufrag: "h6vY", password: "browser-password-22chars")
    private static let source = TransportAddress.ipv4(192, 0, 2, 1, port: 32853)

    static func run(_ input: UnsafeRawBufferPointer) {
        if let prefix = STUNMessage.usernamePrefix(input) {
            precondition(prefix.count < input.count, "a username prefix longer than its datagram")
        }
        _ = STUNMessage.integrityIsValid(input, key: Array(local.password.utf8))
        _ = STUNMessage.fingerprintIsValid(input)

        answer(input)
        do {
            let message = try STUNMessage(parsing: input)
            let bytes = message.encoded()
            precondition(bytes.count <= input.count, "\(bytes.count) bytes written from \(input.count)")
            precondition((try? STUNMessage(parsing: bytes)) == message, "the message does not write back to itself")
            if message.messageClass == .request {
                let signed = message.signed(integrityKey: Array(local.password.utf8))
                // Signing adds up to 32 bytes, which can take a message past the bound it is read at.
                guard signed.count <= STUNWire.maxDatagramBytes else { return }
                precondition(STUNMessage.integrityIsValid(signed, key: Array(local.password.utf8)), "a signed message does not verify")
                precondition(STUNMessage.fingerprintIsValid(signed), "a signed message's fingerprint does not verify")
                signed.withUnsafeBytes { answer($0) }
            }
        } catch {
            precondition(!error.description.isEmpty)
        }
    }

    private static func answer(_ datagram: UnsafeRawBufferPointer) {
        var agent = ICELiteAgent(local: local, remote: remote, now: 0)
        let actions = agent.receive(datagram, from: source, now: 1)
        var sends = 0
        for action in actions {
            switch action {
            case .send(let bytes, let to):
                sends += 1
                precondition(to == source, "an answer sent to \(to), not to where the request came from")
                precondition((try? STUNMessage(parsing: bytes)) != nil, "an answer that does not parse")
                precondition(STUNMessage.fingerprintIsValid(bytes), "an answer without a valid fingerprint")
            case .selected(let address):
                precondition(address == source && agent.selected == source, "selected \(address)")
            case .refused(let refusal):
                precondition(!refusal.description.isEmpty)
            case .expired:
                preconditionFailure("expired on receipt")
            }
        }
        precondition(sends <= 1, "\(sends) answers to one datagram")
    }
}
