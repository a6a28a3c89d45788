#if canImport(Glibc)
import Glibc
#endif

/// The one message a live microphone sends fifty times a second, read in place, without building
/// its JSON tree: `{"type":"input_audio_buffer.append","audio":"<base64>"}`, its keys in any
/// order, an optional string `event_id`, whitespace where JSON allows it. Anything else (another
/// key, a key twice, an escape in a string, a value that is not a string) is not this shape, and
/// `ClientMessage.parse` reads it whole, which also says what is wrong with it; so a message is
/// taken here only as the full parser would take it. A pure value function: bytes in, ranges out.
package enum AudioAppendScan {
    /// Where the `audio` and `event_id` strings' contents are in `bytes`, or nil: not this shape.
    /// `type`: the append's event type (GPT-Live's is `session.input_audio.append`).
    package static func scan(_ bytes: UnsafeBufferPointer<UInt8>, type wanted: StaticString = "input_audio_buffer.append")
        -> (audio: Range<Int>, eventID: Range<Int>?)? {
        var i = 0
        let n = bytes.count
        func skipSpace() {
            while i < n, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
        }
        func expect(_ byte: UInt8) -> Bool {
            skipSpace()
            guard i < n, bytes[i] == byte else { return false }
            i += 1
            return true
        }
        /// A string's contents up to its next quote (found with memchr: the audio is most of the
        /// message). With `checked`, nil if they hold an escape or a control character; unchecked
        /// (the audio), base64's decoding refuses both, and an escaped quote, which ends the range
        /// early, leaves a backslash it refuses too: the whole reading then answers.
        func string(checked: Bool = true) -> Range<Int>? {
            guard expect(UInt8(ascii: "\"")), i <= n, let base = bytes.baseAddress,
                  let quote = memchr(base + i, Int32(UInt8(ascii: "\"")), n - i) else { return nil }
            let start = i
            i = base.distance(to: quote.assumingMemoryBound(to: UInt8.self)) + 1
            let range = start..<(i - 1)
            if checked {
                for k in range where bytes[k] == UInt8(ascii: "\\") || bytes[k] < 0x20 { return nil }
            }
            return range
        }
        func equals(_ range: Range<Int>, _ text: StaticString) -> Bool {
            guard range.count == text.utf8CodeUnitCount else { return false }
            for (k, c) in range.enumerated() where bytes[c] != text.utf8Start[k] { return false }
            return true
        }
        guard expect(UInt8(ascii: "{")) else { return nil }
        var type: Range<Int>?, audio: Range<Int>?, eventID: Range<Int>?
        repeat {
            guard let key = string(), expect(UInt8(ascii: ":")) else { return nil }
            let audioKey = equals(key, "audio")
            guard let value = string(checked: !audioKey) else { return nil }
            if equals(key, "type"), type == nil {
                type = value
            } else if audioKey, audio == nil {
                audio = value
            } else if equals(key, "event_id"), eventID == nil {
                eventID = value
            } else {
                return nil
            }
        } while expect(UInt8(ascii: ","))
        guard expect(UInt8(ascii: "}")) else { return nil }
        skipSpace()
        guard i == n, let type, equals(type, wanted), let audio else { return nil }
        return (audio, eventID)
    }
}
