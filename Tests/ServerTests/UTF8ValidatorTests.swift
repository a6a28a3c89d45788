import Testing
@testable import Server

@Suite struct UTF8ValidatorTests {
    func valid(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { UTF8Validator.isValid($0) } }

    @Test func acceptsAsciiAndMultibyteText() {
        #expect(valid(Array("Hello-µ@ßöäüàá-UTF-8!!".utf8)))
        #expect(valid(Array("κόσμε 𝄞 \u{10FFFF} \u{FFFF}".utf8)))
        #expect(valid([]))
    }

    @Test(arguments: [
        [0xC0, 0xAF],              // overlong "/"
        [0xE0, 0x80, 0xAF],        // overlong, three bytes
        [0xED, 0xA0, 0x80],        // UTF-16 surrogate U+D800
        [0xF4, 0x90, 0x80, 0x80],  // past U+10FFFF
        [0xF8, 0x88, 0x80, 0x80, 0x80],
        [0x80],                    // lone continuation byte
        [0xCE, 0xBA, 0xE1],        // ends inside a sequence
        [0xFE], [0xFF],
    ] as [[UInt8]])
    func refusesMalformedSequences(_ bytes: [UInt8]) {
        #expect(!valid(bytes))
    }

    @Test func validatesAcrossChunkBoundaries() {
        let text = Array("aκόσμε𝄞z".utf8)
        for split in 0...text.count {
            var validator = UTF8Validator()
            let ok = text[..<split].withUnsafeBytes { validator.validate($0) } && text[split...].withUnsafeBytes { validator.validate($0) }
            #expect(ok && validator.isComplete, "split at \(split)")
        }
    }

    @Test func failsAtTheFirstBadByteBeforeTheRestArrives() {
        var validator = UTF8Validator()
        // A valid prefix, then a byte that can never continue it.
        #expect(([0xCE, 0xBA, 0xE1, 0xBD] as [UInt8]).withUnsafeBytes { validator.validate($0) })
        #expect(!([0xB9, 0xCF, 0x83, 0xED, 0xA0] as [UInt8]).withUnsafeBytes { validator.validate($0) })
    }
}
