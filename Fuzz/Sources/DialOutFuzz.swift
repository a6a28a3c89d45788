import JSON
import Media
import SessionEngine
@testable import SIP
@testable import Telephony

/// Calls out (issue 54): the input's first byte chooses what it is. Even: a body for `POST
/// /v1/realtime/calls` (or, its low bits say, `/v1/live/sessions`), which parses or is refused with
/// a described error; a request parsed has a destination that is a number or a SIP URI with a
/// Request-URI to match. 1 (mod 4): the far end's answers to a placed call (with SRTP offered when
/// bit 2 is set), SIP responses split at blank-line boundaries (`\r\n\r\n\r\n`), fed to a
/// `SIPOutboundInvite` with its time advancing; it never reports a second end, never sends an ACK
/// before a 2xx nor an INVITE after one, and answers a challenge at most once. 3 (mod 8): a
/// registrar's answers, the same way, to a `SIPRegistration`: never two REGISTERs for one answer,
/// a challenge answered once an attempt, a grant that is positive. 7 (mod 8): the text the trunks'
/// configuration and the agent give: an `a=crypto` line (what parses, writes back the same), a
/// trunks file (refused with a reason that never holds its password), `press_keys` arguments.
enum DialOutFuzz {
    static let local = SIPDialog.Local(contact: "<sip:parley@192.0.2.5:5060>", mediaHost: "192.0.2.5", mediaPort: 40000)

    static func run(_ input: UnsafeRawBufferPointer) {
        guard let choice = input.first else { return }
        let rest = Array(input.dropFirst())
        if choice & 1 == 0 { return body(rest, live: choice & 2 != 0) }
        if choice & 3 == 1 { return answers(rest, secure: choice & 4 != 0) }
        if choice & 7 == 3 { return registrar(rest) }
        texts(rest)
    }

    /// The input's pieces between `\r\n\r\n\r\n`, at most 16.
    static func pieces(_ bytes: [UInt8]) -> [[UInt8]] {
        let separator: [UInt8] = Array("\r\n\r\n\r\n".utf8)
        var start = 0
        var pieces: [[UInt8]] = []
        while start < bytes.count, pieces.count < 16 {
            var end = start
            while end < bytes.count, !bytes[end...].starts(with: separator) { end += 1 }
            pieces.append(Array(bytes[start..<end]))
            start = end + separator.count
        }
        return pieces
    }

    static func registrar(_ bytes: [UInt8]) {
        var registration = SIPRegistration(registrar: SIPURI("sip:192.0.2.9")!, addressOfRecord: SIPURI("sip:u@192.0.2.9")!, contact: "<sip:u@192.0.2.5>",
                                           callID: "r@parley", localTag: "t", credentials: ("u", "p"), seconds: 600)
        var now: UInt64 = 0
        var sent = registration.start(now: now).count
        var challengesThisAttempt = 0
        for piece in pieces(bytes) {
            now += 40_000_000_000
            let response = (try? SIPMessage(datagram: piece)).flatMap { $0.isRequest ? nil : $0 }
            var actions = registration.received(piece.isEmpty ? nil : response, now: now)
            actions += registration.fire(now: now)
            sent = 0
            for action in actions {
                switch action {
                case .send(let message):
                    sent += 1
                    if message.value("Authorization") != nil || message.value("Proxy-Authorization") != nil { challengesThisAttempt += 1 } else { challengesThisAttempt = 0 }
                case .registered(let seconds): precondition(seconds > 0, "a grant of no time")
                case .failed(_, let retry): precondition(retry >= 1, "a retry at once after a failure")
                case .unregistered: break
                }
            }
            precondition(sent <= 1, "two REGISTERs for one answer")
            precondition(challengesThisAttempt <= 1 || response?.value("WWW-Authenticate")?.contains("stale") == true, "a challenge answered twice")
        }
        _ = registration.unregister()
    }

    static func texts(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        if let crypto = SDESCrypto(attribute: text) {
            precondition(SDESCrypto(attribute: crypto.attribute) == crypto, "an a=crypto line that does not write back as itself")
        }
        do throws(SIPOutboundTrunk.FileError) {
            for (name, trunk) in try SIPOutboundTrunk.parse(file: text, resolve: SIPOutboundTrunk.numeric) {
                precondition(trunk.name == name && (!trunk.srtp || trunk.transport == .tls), "SRTP on a trunk that is not TLS")
            }
        } catch {
            for (_, entry) in (try? JSON(parsing: text))?.object ?? [] {
                guard let password = entry["password"]?.string, password.count >= 6 else { continue }
                precondition(!error.description.contains(password), "a trunks file's password in its refusal")
            }
        }
        do throws(PhoneKeysTool.Refusal) {
            let keys = try PhoneKeysTool.keys(in: text)
            precondition((1...PhoneKeysTool.maxKeys).contains(keys.count) && keys.allSatisfy { "0123456789*#ABCD".contains($0) })
        } catch {
            precondition(!error.message.isEmpty)
        }
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

    static func answers(_ bytes: [UInt8], secure: Bool) {
        var local = local
        if secure { local.crypto = SDESCrypto.fresh() }
        let destination = SIPOutboundInvite.Destination(uri: SIPURI("sip:+15551234567@192.0.2.9")!, from: SIPURI("sip:parley@192.0.2.5")!,
                                                        credentials: (username: "u", password: "p"))
        var call = SIPOutboundInvite(destination: destination, callID: "fuzz@parley", localTag: "p1", local: local, sdpSessionID: 9, now: 0)
        var now: UInt64 = 0
        var ended = 0, answered = false, invites = 1
        for piece in pieces(bytes) {
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
