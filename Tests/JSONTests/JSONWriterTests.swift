import Testing
import JSON

@Suite struct JSONWriterTests {
    @Test func compactOutputKeepsMemberOrder() {
        let value = JSON.object([("type", .string("error")), ("a", .int(1)), ("b", .array([.bool(true), .null]))])
        #expect(value.description == #"{"type":"error","a":1,"b":[true,null]}"#)
    }

    @Test func wholeNumbersPrintWithoutAFraction() {
        #expect(JSON.number(3).description == "3")
        #expect(JSON.number(-0.0).description == "0")
        #expect(JSON.number(0.5).description == "0.5")
        #expect(JSON.number(1e20).description == "1e+20")
    }

    @Test func nonFiniteNumbersPrintAsNull() {
        #expect(JSON.number(.nan).description == "null")
        #expect(JSON.number(.infinity).description == "null")
    }

    @Test func stringsAreEscapedOnlyWhereJSONRequires() {
        #expect(JSON.string("plain/é😀").description == "\"plain/é😀\"")
        #expect(JSON.string("a\"b\\c\nd\u{1}").description == #""a\"b\\c\nd\u0001""#)
    }

    @Test func prettyOutputIndentsObjects() {
        let value = JSON.object([("a", .int(1)), ("b", .object([("c", .string("d"))]))])
        #expect(value.pretty == "{\n  \"a\": 1,\n  \"b\": {\n    \"c\": \"d\"\n  }\n}\n")
    }

    @Test func countTablesAreSortedByKey() {
        #expect(JSON.counts(["b": 2, "a": 1]).description == #"{"a":1,"b":2}"#)
        #expect(JSON.counts(["b": 2, "a": 1]).countTable == ["a": 1, "b": 2])
    }
}
