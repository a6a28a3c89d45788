import JSON
import Loop
import Server
@testable import Telephony
import Testing
import TestSupport

/// Twilio's Media Streams messages as its documentation shows them, decoded; every malformed shape
/// refused with a reason; marks turned into what the caller heard; the request signature as
/// Python's hmac computes it.
@Suite struct TwilioMessageTests {
    @Test func theDocumentedMessagesDecode() throws {
        #expect(try TwilioMessage.parse(#"{"event": "connected", "protocol": "Call", "version": "1.0.0"}"#) == .connected(protocol: "Call"))
        let start = try TwilioMessage.parse(#"""
            {"event": "start", "sequenceNumber": "1",
             "start": {"accountSid": "ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", "streamSid": "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
                       "callSid": "CAXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", "tracks": ["inbound", "outbound"],
                       "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
                       "customParameters": {"FirstName": "Jane", "LastName": "Doe"}},
             "streamSid": "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"}
            """#)
        guard case .start(let call) = start else { Issue.record("\(start)"); return }
        #expect(call.streamSid == "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX" && call.callSid?.hasPrefix("CA") == true && call.tracks == ["inbound", "outbound"])
        #expect(call.encoding == "audio/x-mulaw" && call.sampleRate == 8000 && call.parameter("FirstName") == "Jane")
        let payload = Base64.encode([UInt8](repeating: 0xFF, count: 160))
        #expect(try TwilioMessage.parse(#"{"event": "media", "sequenceNumber": "3", "media": {"track": "inbound", "chunk": "1", "timestamp": "5", "payload": "\#(payload)"}, "streamSid": "MZ1"}"#)
                == .media(track: "inbound", payload: [UInt8](repeating: 0xFF, count: 160)))
        #expect(try TwilioMessage.parse(#"{"event": "mark", "sequenceNumber": "4", "streamSid": "MZ1", "mark": {"name": "my label"}}"#) == .mark(name: "my label"))
        #expect(try TwilioMessage.parse(#"{"event": "dtmf", "streamSid": "MZ1", "sequenceNumber": "5", "dtmf": {"track": "inbound_track", "digit": "1"}}"#) == .dtmf(digit: "1"))
        #expect(try TwilioMessage.parse(#"{"event": "stop", "sequenceNumber": "5", "stop": {"accountSid": "AC1", "callSid": "CA1"}, "streamSid": "MZ1"}"#) == .stop)
    }

    @Test func malformedMessagesAreRefusedWithAReason() {
        let cases: [(String, TwilioMessageError)] = [
            ("not json", .notJSON), ("[1,2]", .notJSON), (#"{"sequenceNumber":"1"}"#, .missing("event")),
            (#"{"event":"media","media":{}}"#, .missing("media.payload")),
            (#"{"event":"media","media":{"payload":"!!!!"}}"#, .invalidBase64),
            (#"{"event":"media","media":{"payload":""}}"#, .payloadSize(0)),
            (#"{"event":"media","media":{"payload":"\#(String(repeating: "A", count: 12_000))"}}"#, .payloadSize(9_000)),
            (#"{"event":"start","start":{}}"#, .missing("start.streamSid")),
            (#"{"event":"dtmf","dtmf":{"digit":"12"}}"#, .missing("dtmf.digit")),
            (#"{"event":"mark","mark":{}}"#, .missing("mark.name")),
            (#"{"event":"hangup"}"#, .unknownEvent("hangup")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected) { try TwilioMessage.parse(text) }
        }
    }

    @Test func theOutboundMessagesAreTwiliosShapes() throws {
        #expect(TwilioOutbound.media(streamSid: "MZ1", audio: [0, 0, 0]) == #"{"event":"media","streamSid":"MZ1","media":{"payload":"AAAA"}}"#)
        #expect(TwilioOutbound.mark(streamSid: "MZ1", name: "m\"1") == #"{"event":"mark","streamSid":"MZ1","mark":{"name":"m\"1"}}"#)
        #expect(TwilioOutbound.clear(streamSid: "MZ1") == #"{"event":"clear","streamSid":"MZ1"}"#)
    }

    @Test func echoedMarksSayWhatTheCallerHeard() {
        var playback = TwilioPlayback()
        let names = (0..<5).map { _ in playback.sent(20, of: "resp_1") }
        #expect(playback.outstanding == 5 && playback.heard("resp_1") == 0)
        let first = playback.echoed(names[1])
        #expect(first, "an echo also covers the marks before it")
        #expect(playback.heard("resp_1") == 40 && playback.outstanding == 3)
        // A barge-in: clear drops the rest, and their late echoes are not heard audio.
        let dropped = playback.cleared()
        let late = playback.echoed(names[4]), foreign = playback.echoed("not-ours")
        #expect(dropped == 3 && !late && !foreign && playback.heard("resp_1") == 40)
        let next = playback.sent(20, of: "resp_2")
        let echoed = playback.echoed(next)
        #expect(echoed && playback.heard("resp_2") == 20)
    }

    @Test func aPausedReplyIsResentFromWhatTheCallerHeard() {
        var playback = TwilioPlayback()
        let names = (0..<5).map { _ in playback.sent(20, of: "resp_1") }
        _ = playback.echoed(names[1])
        // The caller spoke: clear, and the reply will be sent again from 40 ms.
        _ = playback.cleared()
        playback.rewind("resp_1", toMs: playback.heard("resp_1"))
        let again = playback.sent(20, of: "resp_1")
        let echoed = playback.echoed(again)
        #expect(echoed && playback.heard("resp_1") == 60)
    }

    @Test func theSignatureIsTwiliosHMACSHA1OfTheURL() throws {
        let token = "12345abcdef-auth-token"
        let url = "wss://voice.example.com/twilio?agent=sales"
        let python = try Subprocess.capture(["python3", "-c",
            "import base64,hashlib,hmac,sys; print(base64.b64encode(hmac.new(sys.argv[1].encode(), sys.argv[2].encode(), hashlib.sha1).digest()).decode())",
            token, url])
        let signature = TwilioSignature(authToken: Array(token.utf8), publicBase: nil)
        let theirs = String(python.stdout.prefix { !$0.isWhitespace })
        #expect(signature.expected(for: url) == theirs)
        #expect(signature.accepts(theirs, url: url))
        #expect(!signature.accepts(theirs, url: url + "&x=1") && !signature.accepts(nil, url: url) && !signature.accepts("", url: url))
        let request = HTTPRequest(method: "GET", target: "/twilio?agent=sales", minorVersion: 1, headers: [("Host", "voice.example.com")])
        #expect(signature.url(of: request) == url)
        #expect(TwilioSignature(authToken: [], publicBase: "wss://public.example.com/").url(of: request) == "wss://public.example.com/twilio?agent=sales")
    }
}
