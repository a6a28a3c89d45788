import Testing
@testable import Session
@testable import SessionEngine

/// A microphone's append is read in place (`AudioAppendScan`), and every message gives what the
/// whole JSON reading gives: the same audio and event id for the shapes the scan takes, and for
/// everything else (another key, an escape, a key twice, bad base64, not JSON) the whole reading's
/// own answer, error included.
@Suite struct AudioAppendScanTests {
    static let audio = "AAABAAIAAwD//w=="

    static let taken = [
        #"{"type":"input_audio_buffer.append","audio":"\#(audio)"}"#,
        #"{"audio":"\#(audio)","type":"input_audio_buffer.append"}"#,
        #"{"event_id":"evt_1","type":"input_audio_buffer.append","audio":"\#(audio)"}"#,
        #" { "type" : "input_audio_buffer.append" ,"audio":"\#(audio)" , "event_id":"é"}  "#,
        "{\n\t\"type\": \"input_audio_buffer.append\",\r\n\t\"audio\": \"\"\n}",
    ]

    static let notTaken = [
        #"{"type":"input_audio_buffer.append","audio":"\#(audio)","extra":1}"#,
        #"{"type":"input_audio_buffer.append","audio":"AAAB\/w=="}"#,
        #"{"type":"input_audio_buffer.append","audio":"AA\"AB"}"#,
        "{\"type\":\"input_audio_buffer.append\",\"audio\":\"AA\tA\"}",
        #"{"type":"input_audio\u005fbuffer.append","audio":"\#(audio)"}"#,
        #"{"type":"input_audio_buffer.append","audio":"\#(audio)","audio":"\#(audio)"}"#,
        #"{"type":"input_audio_buffer.append","audio":"not base64!"}"#,
        #"{"type":"input_audio_buffer.append","audio":12}"#,
        #"{"type":"input_audio_buffer.append"}"#,
        #"{"type":"input_audio_buffer.commit","audio":"\#(audio)"}"#,
        #"{"type":"input_audio_buffer.append","audio":"\#(audio)"} x"#,
        #"{"type":"input_audio_buffer.append","audio":"\#(audio)""#,
        #"{"type":"input_audio_buffer.append","event_id":5,"audio":"\#(audio)"}"#,
        "[]",
        "",
    ]

    static func answer(_ read: (String) throws(ProtocolError) -> ClientMessage, _ text: String) -> Result<ClientMessage, ProtocolError> {
        do throws(ProtocolError) {
            return .success(try read(text))
        } catch {
            return .failure(error)
        }
    }

    @Test(arguments: taken)
    func theAppendsShapeIsReadInPlaceAsTheWholeReadingReadsIt(_ text: String) throws {
        let found = text.utf8.withContiguousStorageIfAvailable { AudioAppendScan.scan($0) }
        #expect(found != nil, "not taken in place: \(text)")
        let fast = Self.answer(ClientMessage.parse, text)
        #expect(fast == Self.answer(ClientMessage.parseWhole, text))
        guard case .success(.audioAppend) = fast else {
            Issue.record("not an append: \(fast)")
            return
        }
    }

    @Test(arguments: notTaken)
    func anythingElseIsReadWholeWithItsOwnAnswer(_ text: String) {
        #expect(Self.answer(ClientMessage.parse, text) == Self.answer(ClientMessage.parseWhole, text), "\(text)")
    }
}
