import Testing
@testable import SIP

/// RFC 4028 section 9, as a UAS that refreshes nothing itself answers.
@Suite struct SIPSessionTimerAnswerTests {
    static func update(_ extra: String...) -> SIPMessage {
        let lines = ["UPDATE sip:parley@192.0.2.10 SIP/2.0", "Via: SIP/2.0/UDP 198.51.100.7;branch=z9hG4bKse1", "Max-Forwards: 70",
             "To: <sip:parley@192.0.2.10>;tag=p1", "From: <sip:+15551234567@198.51.100.7>;tag=c1", "Call-ID: se@198.51.100.7",
             "CSeq: 3 UPDATE"] + extra + [""]
        return try! SIPMessage(datagram: Array(lines.map { $0 + "\r\n" }.joined().utf8))
    }

    static func fields(_ request: SIPMessage) -> [String] {
        SIPSessionTimerAnswer.headers(for: request).map { "\($0.name): \($0.value)" }
    }

    @Test func theCallersRefreshesAreTakenWithItAsTheRefresher() {
        #expect(Self.fields(Self.update("Supported: timer", "Session-Expires: 1800;refresher=uac"))
                == ["Session-Expires: 1800;refresher=uac", "Require: timer"])
        // No refresher said: the UAS chooses (section 9), and the caller it is.
        #expect(Self.fields(Self.update("Supported: 100rel, timer, replaces", "x: 900"))
                == ["Session-Expires: 900;refresher=uac", "Require: timer"])
    }

    @Test func refreshesAskedOfParleyAreDeclined() {
        // Parley would have to refresh: no Session-Expires, no session expiration (section 7.2).
        #expect(Self.fields(Self.update("Supported: timer", "Session-Expires: 1800;refresher=uas")).isEmpty)
        // A proxy's Session-Expires before a caller that does not support the timer.
        #expect(Self.fields(Self.update("Session-Expires: 1800")).isEmpty)
    }

    @Test func noSessionExpiresSaysNothing() {
        // (One that cannot be read never gets here: the parser refuses the message.)
        #expect(Self.fields(Self.update("Supported: timer")).isEmpty)
    }
}
