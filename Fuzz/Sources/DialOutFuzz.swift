import Media
import SessionEngine
@testable import SIP
@testable import Telephony

/// Calls out (issue 54): the input's first byte chooses what it is. Even: a body for `POST
/// /v1/realtime/calls` (or, its low bits say, `/v1/live/sessions`), which parses or is refused with
/// a described error; a request parsed has a destination that is a number or a SIP URI with a
/// Request-URI to match. Odd: the far end's answers to a placed call, SIP responses split at
/// blank-line boundaries (`\r\n\r\n\r\n`), fed to a `SIPOutboundInvite` with its time advancing; it
/// never reports a second end, never sends an ACK before a 2xx nor an INVITE after one, and answers
/// a challenge at most once.
enum DialOutFuzz {
    static let local = SIPDialog.Local(contact: "<sip:parley@192.0.2.5:5060>", mediaHost: "192.0.2.5", mediaPort: 40000)

    static func run(_ input: UnsafeRawBufferPointer) {
        guard let choice = input.first else { return }
        let rest = Array(input.dropFirst())
        if choice & 1 == 0 { return body(rest, live: choice & 2 != 0) }
        answers(rest)
    }

    static func body(_ bytes: [UInt8], live: Bool) {
        do throws(ProtocolError) {
            let request = try SIPDialRequest.parse(bytes, live: live)
            precondition(SIPDialRequest.isNumber(request.destination) || SIPDialRequest.isSIPURI(request.destination), "a destination neither a number nor a SIP URI")
            let trunk = SIPOutboundTrunk(name: "t", uri: "sip:192.0.2.9:5060")!
            precondition(request.requestURI(at: trunk) != nil, "a destination with no Request-URI")
            precondition((5...120).contains(request.ringSeconds))
        } catch {
            precondition(!error.message.isEmpty)
        }
    }

    static func answers(_ bytes: [UInt8]) {
        let destination = SIPOutboundInvite.Destination(uri: SIPURI("sip:+15551234567@192.0.2.9")!, from: SIPURI("sip:parley@192.0.2.5")!,
                                                        credentials: (username: "u", password: "p"))
        var call = SIPOutboundInvite(destination: destination, callID: "fuzz@parley", localTag: "p1", local: local, sdpSessionID: 9, now: 0)
        var now: UInt64 = 0
        var ended = 0, answered = false, invites = 1
        let separator: [UInt8] = Array("\r\n\r\n\r\n".utf8)
        var start = 0
        var pieces: [[UInt8]] = []
        while start < bytes.count {
            var end = start
            while end < bytes.count, !bytes[end...].starts(with: separator) { end += 1 }
            pieces.append(Array(bytes[start..<end]))
            start = end + separator.count
        }
        for piece in pieces.prefix(16) {
            now += 700_000_000
            var actions = call.fire(now: now)
            var is2xx = false
            if let response = try? SIPMessage(datagram: piece), !response.isRequest {
                is2xx = (200..<300).contains(response.status ?? 0)
                actions += call.received(response)
            }
            for action in actions {
                switch action {
                case .progress(.answered): answered = true; ended += 1
                case .progress(.failed): ended += 1
                case .progress: break
                case .ack: precondition(is2xx, "an ACK of anything but a 2xx")
                case .invite: invites += 1; precondition(!answered, "an INVITE after the answer")
                case .cancel: break
                }
            }
            precondition(ended <= 1, "a call that ended twice")
            precondition(invites <= 2, "a challenge answered more than once")
        }
        _ = call.dialog()
    }
}
