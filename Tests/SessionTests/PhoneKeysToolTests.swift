import Testing
@testable import SessionEngine

/// The agent's `press_keys` arguments, as values.
@Suite struct PhoneKeysToolTests {
    @Test func keysAreReadInOrderWithSeparatorsSkipped() throws {
        #expect(try PhoneKeysTool.keys(in: #"{"keys":"1"}"#) == ["1"])
        #expect(try PhoneKeysTool.keys(in: #"{"keys":"4, 2-*#"}"#) == ["4", "2", "*", "#"])
        #expect(try PhoneKeysTool.keys(in: #"{"keys":"abcd"}"#) == ["A", "B", "C", "D"])
        #expect(try PhoneKeysTool.keys(in: #"{"keys":7}"#) == ["7"], "a number, as a model may send one")
        #expect(PhoneKeysTool.output(pressed: ["1", "#"]) == #"{"pressed":"1#"}"#)
    }

    @Test func whatIsNotKeysIsRefusedWithWhy() {
        let cases: [(String, PhoneKeysTool.Refusal)] = [
            ("not json", .notJSON), (#"["1"]"#, .notJSON), (#"{}"#, .noKeys), (#"{"keys":""}"#, .noKeys), (#"{"keys":" , "}"#, .noKeys),
            (#"{"keys":"one"}"#, .notKeys("o")), (#"{"keys":"12e"}"#, .notKeys("e")),
            (#"{"keys":"\#(String(repeating: "1", count: 33))"}"#, .tooMany(33)),
        ]
        for (arguments, refusal) in cases {
            #expect(throws: refusal, "\(arguments)") { try PhoneKeysTool.keys(in: arguments) }
        }
        #expect(PhoneKeysTool.output(refused: PhoneKeysTool.Refusal.noKeys.message) == #"{"error":"'keys' is missing or empty"}"#)
    }
}
