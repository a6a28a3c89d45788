import Models
@testable import Speech
import Testing

/// A loop's record of a stream at the helper, without a socket: which verdict audio is that
/// stream's (and may be sent as its name), and the silence test on a running sum of squares.
struct SpeechHelperStreamTests {
    static func stream(_ pieces: [[Int16]], rate: Int = 16_000) -> SpeechHelperStream {
        var stream = SpeechHelperStream(rate: rate, socket: ObjectIdentifier(SpeechHelperStreamTests.Token.shared)) { _ in }
        for piece in pieces { stream.appended(piece) }
        return stream
    }

    final class Token: Sendable { static let shared = Token() }

    static func tone(_ count: Int, from start: Int = 0) -> [Int16] {
        (start..<(start + count)).map { Int16(truncatingIfNeeded: ($0 * 7919) % 20_000 - 10_000) }
    }

    @Test func theVerdictsAudioIsTheStreamsWhenItsLastHalfSecondIs() {
        let audio = Self.tone(48_000)
        let stream = Self.stream(stride(from: 0, to: audio.count, by: 320).map { Array(audio[$0..<min(audio.count, $0 + 320)]) })
        #expect(stream.count == 48_000)
        // The engine asks about the turn's last 8 s, or all of a shorter one: any suffix of what was sent.
        #expect(stream.holds(audio[...], rate: 16_000))
        #expect(stream.holds(audio.suffix(20_000), rate: 16_000))
    }

    @Test func otherAudioAnotherRateOrMoreThanWasSentIsNot() {
        let audio = Self.tone(48_000)
        let stream = Self.stream([audio])
        #expect(!stream.holds(Self.tone(48_000, from: 1)[...], rate: 16_000))
        #expect(!stream.holds(audio[...], rate: 8_000))
        #expect(!stream.holds((Self.tone(100) + audio)[...], rate: 16_000))
        // Audio the stream has not yet been sent: its end is not the stream's end.
        #expect(!stream.holds(audio.prefix(40_000), rate: 16_000))
    }

    @Test func digitalSilenceMatchesNoStream() {
        let quiet = [Int16](repeating: 0, count: 16_000)
        let stream = Self.stream([Self.tone(16_000), quiet])
        #expect(!stream.holds((Self.tone(16_000) + quiet)[...], rate: 16_000))
    }

    @Test func aShortTurnMustBeTheWholeStream() {
        let audio = Self.tone(4_000)
        let stream = Self.stream([audio])
        #expect(stream.holds(audio[...], rate: 16_000))
        #expect(!stream.holds(audio.suffix(3_000), rate: 16_000))
    }
}
