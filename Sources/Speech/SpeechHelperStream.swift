import Models

/// What a loop's connection knows of one stream open at the helper: its rate, and the socket it
/// was opened on (a new socket is a new helper, which has never heard of it). The audio itself is
/// at the helper; a verdict on the turn names the stream (`SpeechHelperConnection.stream(_:rate:)`).
struct SpeechHelperStream {
    let rate: Int
    let socket: ObjectIdentifier
    let failed: (ModelError) -> Void
}

/// Which of the helper's recognisers decodes a stream and in which language (its `open`'s `model`
/// and `language`): nil, the helper's default recogniser, and the language it finds (English on
/// tiny.en).
struct SpeechHelperStreamChoice: Equatable {
    var model: String?
    var language: String?
}
