import Loop
import Media
import SIP

/// What a `parley-load sip` caller says, as a phone says it over UDP (RFC 3261): an INVITE with
/// a PCMU offer (and telephone-event), the ACK of its final response, a BYE, and the 200 that
/// answers a BYE from the server. Each request's Via names the socket it leaves from, with
/// `rport` (RFC 3581), so that the answer comes back to that socket.
enum SIPLoadMessages {
    /// The identity of one call's dialog, from the caller's side.
    struct Dialog {
        /// Where the INVITE goes: the server's SIP port on 127.0.0.1.
        let serverPort: UInt16
        let callID: String
        let fromTag: String
        /// The socket the call's SIP leaves from.
        let signallingPort: UInt16
        /// The socket the call's RTP leaves from and comes to (the offer's `m=` port).
        let mediaPort: UInt16
        let user: String

        var requestURI: SIPURI { SIPURI(user: "parley", host: "127.0.0.1", port: serverPort) }
        var from: String { "<sip:\(user)@127.0.0.1>;tag=\(fromTag)" }
        var contact: String { "<sip:\(user)@127.0.0.1:\(signallingPort)>" }

        func via(branch: String) -> String { "SIP/2.0/UDP 127.0.0.1:\(signallingPort);branch=\(SIPVia.magicCookie)\(branch);rport" }
    }

    /// The INVITE, its offer PCMU (payload type 0) and telephone-event (101) at 20 ms.
    static func invite(_ dialog: Dialog, branch: String, sessionID: Int) -> [UInt8] {
        var message = request("INVITE", to: dialog.requestURI, dialog, branch: branch, toHeader: nil, sequence: 1)
        message.add("Contact", dialog.contact)
        message.add("User-Agent", "parley-load")
        message.add("Content-Type", "application/sdp")
        message.body = Array(offer(port: dialog.mediaPort, sessionID: sessionID).utf8)
        return message.encoded()
    }

    static func offer(port: UInt16, sessionID: Int) -> String {
        ["v=0", "o=parley-load \(sessionID) 1 IN IP4 127.0.0.1", "s=parley-load", "c=IN IP4 127.0.0.1", "t=0 0",
         "m=audio \(port) RTP/AVP 0 101", "a=rtpmap:0 PCMU/8000", "a=rtpmap:101 telephone-event/8000", "a=fmtp:101 0-16",
         "a=ptime:20", "a=sendrecv", ""].joined(separator: "\r\n")
    }

    /// The ACK of the INVITE's final response. For a 2xx it is a request of its own in the dialog
    /// (section 13.2.2.4: a new branch, to the answer's Contact); for a failure it belongs to the
    /// INVITE's transaction (section 17.1.1.3: the INVITE's branch and Request-URI).
    static func ack(_ dialog: Dialog, response: SIPMessage, inviteBranch: String, ackBranch: String) -> [UInt8] {
        let success = (200..<300).contains(response.status ?? 0)
        let target = success ? remoteTarget(response) ?? dialog.requestURI : dialog.requestURI
        return request("ACK", to: target, dialog, branch: success ? ackBranch : inviteBranch, toHeader: response.value("To"), sequence: 1).encoded()
    }

    /// The caller's BYE (CSeq 2), to the answer's Contact.
    static func bye(_ dialog: Dialog, answer: SIPMessage, branch: String) -> [UInt8] {
        request("BYE", to: remoteTarget(answer) ?? dialog.requestURI, dialog, branch: branch, toHeader: answer.value("To"), sequence: 2).encoded()
    }

    /// A request of the caller's in `dialog`, with the headers every one carries (section 8.1.1);
    /// `toHeader` is the answer's To (with the server's tag), nil before there is one.
    private static func request(_ method: String, to target: SIPURI, _ dialog: Dialog, branch: String, toHeader: String?, sequence: Int) -> SIPMessage {
        var message = SIPMessage(.request(method: method, uri: target))
        message.add("Via", dialog.via(branch: branch))
        message.add("Max-Forwards", "70")
        message.add("From", dialog.from)
        message.add("To", toHeader ?? "<\(dialog.requestURI)>")
        message.add("Call-ID", dialog.callID)
        message.add("CSeq", "\(sequence) \(method)")
        return message
    }

    /// 200 OK to a request the server sent in the dialog (its BYE).
    static func ok(to request: SIPMessage) -> [UInt8] {
        SIPMessage.response(to: request, status: 200).encoded()
    }

    /// Where the answer says the caller's RTP goes: its SDP's `c=` address and `m=` port.
    static func mediaAddress(_ answer: SIPMessage) -> SocketAddress? {
        guard let sdp = try? SessionDescription(parsing: answer.body), let audio = try? PhoneAudioOffer(sdp) else { return nil }
        return (try? Sys.resolve(host: audio.address, port: Int(audio.port), passive: false, numericOnly: true))?.first
    }

    static func remoteTarget(_ response: SIPMessage) -> SIPURI? { (try? response.contacts())?.first?.uri }

    /// The caller's index in a Call-ID this harness made ("<index>.<run>@parley-load").
    static func index(ofCallID callID: String) -> Int? { callID.split(separator: ".").first.flatMap { Int($0) } }

    static func callID(index: Int, run: String) -> String { "\(index).\(run)@parley-load" }
}
