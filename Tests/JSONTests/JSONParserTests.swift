import Testing
import JSON

@Suite struct JSONParserTests {
    private func parse(_ text: String) throws(JSON.ParseError) -> JSON { try JSON(parsing: text) }

    private func rejection(_ text: String) -> JSON.ParseError? {
        do {
            _ = try JSON(parsing: text)
            return nil
        } catch {
            return error
        }
    }

    @Test func parsesEveryKindOfValue() throws {
        let value = try parse(#" {"a": [1, -2.5, 3e2, 0, -0.25E-1], "b": {"c": null}, "d": true, "e": false, "f": "x"} "#)
        #expect(value == .object([
            ("a", .array([.number(1), .number(-2.5), .number(300), .number(0), .number(-0.025)])),
            ("b", .object([("c", .null)])),
            ("d", .bool(true)),
            ("e", .bool(false)),
            ("f", .string("x")),
        ]))
    }

    @Test func writtenValuesParseBackEqual() throws {
        let values: [JSON] = [
            .object([("type", .string("session.update")), ("nested", .array([.null, .bool(true), .object([])]))]),
            .string("quotes \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} emoji 😀 accents é"),
            .array([.number(0.5), .number(-12), .number(1e-7), .number(123456789012), .number(1.5e300)]),
            .array([]),
            .string(""),
        ]
        for value in values {
            #expect(try parse(value.description) == value, "\(value)")
            #expect(try parse(value.pretty) == value, "\(value)")
        }
    }

    @Test func surrogatePairsDecodeToOneScalar() throws {
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try parse(#""a\uD83C\uDF89b""#) == .string("a🎉b"))
        #expect(try parse(#""\u00e9\u4e2d""#) == .string("é中"))
    }

    @Test func loneSurrogatesBecomeReplacementCharacters() throws {
        #expect(try parse(#""\ud83d""#) == .string("\u{FFFD}"))
        #expect(try parse(#""\ude00x""#) == .string("\u{FFFD}x"))
        // A high surrogate followed by an escape that is not a low surrogate: both are kept apart.
        #expect(try parse(#""\ud83d\n""#) == .string("\u{FFFD}\n"))
        #expect(try parse(#""\ud83d\u0041""#) == .string("\u{FFFD}A"))
    }

    @Test func simpleEscapesDecode() throws {
        #expect(try parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{8}\u{C}\n\r\t"))
    }

    @Test func rawControlCharactersInStringsAreRejected() {
        let error = rejection("\"a\nb\"")
        #expect(error?.offset == 2)
        #expect(error?.reason.contains("control character U+000A") == true)
        #expect(rejection("\"tab\there\"") != nil)
        #expect(rejection("\"\u{0}\"") != nil)
    }

    @Test func invalidEscapesAreRejected() {
        #expect(rejection(#""\x41""#)?.reason.contains("invalid escape") == true)
        #expect(rejection(#""\u12""#)?.reason.contains("four hex digits") == true)
        #expect(rejection(#""\u12G4""#) != nil)
        #expect(rejection(#""\'""#) != nil)
    }

    @Test func numbersFollowRFC8259Strictly() throws {
        for bad in ["01", "-01", "+1", ".5", "5.", "1.e3", "1e", "1e+", "--1", "-", "0x10", "Infinity", "NaN", "1_000"] {
            #expect(rejection(bad) != nil, "\(bad)")
        }
        for (good, value) in [("0", 0.0), ("-0", -0.0), ("10", 10), ("1.25", 1.25), ("1E3", 1000), ("2e-3", 0.002), ("1e+2", 100)] {
            #expect(try parse(good) == .number(value), "\(good)")
        }
    }

    @Test func numbersBeyondDoubleRangeAreRejected() {
        #expect(rejection("1e400")?.reason.contains("out of range") == true)
        #expect(rejection("-1e999") != nil)
    }

    @Test func leadingZeroErrorNamesTheNumber() {
        let error = rejection(#"{"n": 007}"#)
        #expect(error?.offset == 6)
        #expect(error?.reason == "number with a leading zero")
    }

    @Test func nestingIsBoundedAt64Levels() throws {
        let deepest = String(repeating: "[", count: JSON.maxDepth) + String(repeating: "]", count: JSON.maxDepth)
        #expect(try parse(deepest).array != nil)
        let tooDeep = String(repeating: "[", count: JSON.maxDepth + 1) + String(repeating: "]", count: JSON.maxDepth + 1)
        #expect(rejection(tooDeep)?.reason.contains("nesting deeper than 64") == true)
        // Hostile depth fails quickly rather than exhausting the stack.
        #expect(rejection(String(repeating: #"{"a":"#, count: 100_000)) != nil)
    }

    @Test func structuralMistakesAreRejectedWithTheirPlace() {
        let cases: [(String, Int, String)] = [
            ("", 0, "end of input"),
            ("[1,]", 3, "expected a value"),
            (#"{"a":1,}"#, 7, "expected a string key"),
            (#"{"a" 1}"#, 5, "':' after an object key"),
            (#"{"a":1 "b":2}"#, 7, "expected ',' or '}'"),
            ("[1 2]", 3, "expected ',' or ']'"),
            (#"{'a':1}"#, 1, "expected a string key"),
            ("[1] x", 4, "after the JSON value"),
            ("tru", 0, "invalid literal"),
            (#""abc"#, 0, "unterminated string"),
            ("[1, 2", 5, "end of input inside an array"),
            ("// comment\n1", 0, "expected a value"),
        ]
        for (text, offset, reason) in cases {
            let error = rejection(text)
            #expect(error?.offset == offset, "\(text)")
            #expect(error?.reason.contains(reason) == true, "\(text): \(String(describing: error))")
        }
    }

    @Test func errorDescriptionSaysWhatAndWhere() {
        #expect(rejection("[1,]")?.description == "invalid JSON at byte 3: unexpected ']', expected a value")
    }

    @Test func lookupsTakeTheLastOfRepeatedKeys() throws {
        let value = try parse(#"{"a": 1, "a": 2}"#)
        #expect(value["a"] == .number(2))
        #expect(value["missing"] == nil)
        #expect(JSON.array([])["a"] == nil)
    }

    @Test func intAccessorRefusesFractionsAndHugeNumbersWithoutTrapping() throws {
        #expect(try parse("42").int == 42)
        #expect(try parse("2.5").int == nil)
        #expect(try parse("1e300").int == nil)
        #expect(try parse("-9").int == -9)
        #expect(JSON.string("3").int == nil)
    }

    @Test func substringsParse() throws {
        let text = "xx[1,2]yy"
        let inner = text.dropFirst(2).dropLast(2)
        #expect(try JSON(parsing: inner) == .array([.number(1), .number(2)]))
    }
}
