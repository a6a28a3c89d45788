import Logging
import Testing
@testable import parley

@Suite struct StderrLogHandlerTests {
    func line(_ message: String, _ metadata: Logger.Metadata = [:], format: StderrLogHandler.Format = .logfmt) -> String {
        StderrLogHandler.line(time: "T", level: .info, label: "parley.test", message: message, metadata: metadata, format: format)
    }

    @Test func logfmtQuotesOnlyWhatNeedsIt() {
        #expect(line("session opened", ["session": "sess_1", "code": "1000"]) ==
                "ts=T level=info logger=parley.test msg=\"session opened\" code=1000 session=sess_1\n")
        #expect(line("a \"quoted\"\nline") == "ts=T level=info logger=parley.test msg=\"a \\\"quoted\\\"\\nline\"\n")
        #expect(line("x", ["k": "a=b"]).hasSuffix(" k=\"a=b\"\n"))
    }

    @Test func jsonIsOneObjectWithEscapes() {
        #expect(line("m\u{1}\"", ["session": "sess_1"], format: .json) ==
                "{\"ts\":\"T\",\"level\":\"info\",\"logger\":\"parley.test\",\"msg\":\"m\\u0001\\\"\",\"session\":\"sess_1\"}\n")
    }

    @Test func metadataNamedForASecretIsRedacted() {
        let text = line("x", ["authorization": "Bearer abc", "api_key": "k", "upstream_token": "t", "session": "s"])
        #expect(!text.contains("abc") && !text.contains("=k ") && !text.contains("=t"))
        #expect(text.contains("authorization=[redacted]") && text.contains("session=s"))
    }

    @Test func credentialsQuotedInTextAreScrubbed() {
        #expect(StderrLogHandler.scrub("Incorrect API key provided: sk-proj-abcdef123456. See docs") ==
                "Incorrect API key provided: sk-[redacted]. See docs")
        #expect(StderrLogHandler.scrub("header Bearer eyJhbGciOi.x.y, next") == "header Bearer [redacted], next")
        #expect(StderrLogHandler.scrub("no secret here") == "no secret here")
    }

    @Test func timestampIsRFC3339UTCWithMilliseconds() {
        let ts = StderrLogHandler.timestamp()
        #expect(ts.count == 24 && ts.hasSuffix("Z") && ts.dropFirst(10).first == "T")
    }
}
