import Codec
import JSON
@testable import Telephony

/// A Twilio Media Streams text message, as a call's handler takes it: decoded as UTF-8, parsed by
/// `TwilioMessage.parse`, then used as the handler uses it. Checks that a refusal has a reason and
/// a metrics label; that media is 1 to `maxPayloadBytes` bytes and decodes to a sample a byte; that
/// the stream id a `start` gives, which every message the server sends repeats, leaves those
/// messages JSON that reads back to it; and that an echoed mark matches only a mark that was sent.
enum TwilioFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        let message: TwilioMessage
        do {
            message = try TwilioMessage.parse(String(decoding: input, as: UTF8.self))
        } catch {
            precondition(TwilioRejection.allCases.contains(error.reason) && !error.message.isEmpty, "\(error) has no reason or message")
            return
        }
        switch message {
        case .start(let call):
            for outbound in [TwilioOutbound.media(streamSid: call.streamSid, audio: [0, 0, 0]), TwilioOutbound.mark(streamSid: call.streamSid, name: "m1"),
                             TwilioOutbound.clear(streamSid: call.streamSid)] {
                let sent = try? JSON(parsing: outbound)
                precondition(sent?["streamSid"]?.string == call.streamSid, "\(outbound) does not carry the stream id back")
            }
        case .media(_, let payload):
            precondition((1...TwilioMessage.maxPayloadBytes).contains(payload.count), "a \(payload.count)-byte payload")
            precondition(payload.withUnsafeBytes { G711.decode($0, .muLaw) }.count == payload.count)
        case .mark(let name):
            var playback = TwilioPlayback()
            let sent = (0..<3).map { _ in playback.sent(20, of: "resp_1") }
            precondition(playback.echoed(name) == sent.contains(name), "mark \(name) matched wrongly")
        case .dtmf(let digit):
            precondition("0123456789*#ABCD".contains(digit), "key \(digit)")
        case .connected, .stop:
            break
        }
    }
}
