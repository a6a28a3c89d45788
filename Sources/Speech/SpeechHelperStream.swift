import Models

/// What a loop's connection knows of one stream open at the helper: its rate, and the socket it
/// was opened on (a new socket is a new helper, which has never heard of it). The audio itself is
/// at the helper; a verdict on the turn names the stream (`SpeechHelperConnection.stream(_:rate:)`).
struct SpeechHelperStream {
    let rate: Int
    let socket: ObjectIdentifier
    let failed: (ModelError) -> Void
}
