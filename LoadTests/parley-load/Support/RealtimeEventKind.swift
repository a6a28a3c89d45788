import JSON

/// The server events `turns` acts on, told apart by their `type`. A reply is mostly text deltas
/// (twenty or so a turn, thousands a second under load), and the client shares its cores with the
/// server, so the type is read straight from the bytes when the event begins `{"type":"…"`, as
/// Parley writes it; anything else falls back to a full parse.
enum RealtimeEventKind: Equatable {
    case sessionCreated
    case sessionUpdated
    case responseCreated
    case outputTextDelta
    case responseDone
    case speechStarted
    case speechStopped
    case error
    case other

    private static let prefix = Array(#"{"type":""#.utf8)
    /// Most frequent first.
    private static let names: [(bytes: [UInt8], kind: RealtimeEventKind)] = [
        (Array("response.output_text.delta".utf8), .outputTextDelta),
        (Array("response.done".utf8), .responseDone),
        (Array("response.created".utf8), .responseCreated),
        (Array("session.created".utf8), .sessionCreated),
        (Array("session.updated".utf8), .sessionUpdated),
        (Array("input_audio_buffer.speech_started".utf8), .speechStarted),
        (Array("input_audio_buffer.speech_stopped".utf8), .speechStopped),
        (Array("error".utf8), .error),
    ]

    /// The kind of the event in `payload`, a text message.
    static func of(_ payload: UnsafeRawBufferPointer) -> RealtimeEventKind {
        if payload.count > prefix.count, payload.prefix(prefix.count).elementsEqual(prefix) {
            let rest = payload[prefix.count...]
            // A backslash means an escaped name, which only the parser reads right.
            if let quote = rest.firstIndex(where: { $0 == 0x22 || $0 == 0x5C }), payload[quote] == 0x22 {
                let name = payload[prefix.count..<quote]
                return names.first { $0.bytes.elementsEqual(name) }?.kind ?? .other
            }
        }
        guard let type = (try? JSON(parsing: String(decoding: payload, as: UTF8.self)))?["type"]?.string else { return .other }
        return names.first { $0.bytes.elementsEqual(type.utf8) }?.kind ?? .other
    }
}
