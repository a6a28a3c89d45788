import SessionEngine

/// The `output_audio_buffer` events, as OpenAI's Realtime API sends them on a call ("WebRTC/SIP
/// only": a call's data channel and its sidebands): `started` when a reply's first audio goes out
/// on the call's media, `stopped` once it has all gone (after the reply's `response.done`),
/// `cleared` when it was cut (a barge-in, or the client's `output_audio_buffer.clear`). A value: what the wire saw in, the events to send out,
/// so that a reply is started once and ends once, whichever way it ends.
package struct OutputAudioBuffer {
    package init() {}

    /// The reply whose audio is going out, if any (one at a time: a new reply starts after the
    /// last one ended or was cut).
    package private(set) var playing: String?

    /// A piece of `responseID`'s audio is about to go out.
    package mutating func audio(of responseID: String) -> ServerEvent.Kind? {
        guard playing != responseID else { return nil }
        playing = responseID
        return .outputAudioBufferStarted(responseID: responseID)
    }

    /// `response.done` for `responseID` went out: its audio has all been sent (a reply's audio is
    /// paced out before it is done).
    package mutating func done(_ responseID: String) -> ServerEvent.Kind? {
        guard playing == responseID else { return nil }
        playing = nil
        return .outputAudioBufferStopped(responseID: responseID)
    }

    /// The reply's speech was stopped by the server (a barge-in, a cancel): `cleared`, once.
    package mutating func stopped(_ responseID: String) -> ServerEvent.Kind? {
        guard playing == responseID else { return nil }
        playing = nil
        return .outputAudioBufferCleared(responseID: responseID)
    }

    /// The engine itself said `cleared` (the client's `output_audio_buffer.clear`): nothing more
    /// for that reply.
    package mutating func cleared(_ responseID: String) {
        if playing == responseID { playing = nil }
    }
}
