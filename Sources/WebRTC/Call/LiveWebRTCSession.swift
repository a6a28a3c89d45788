import Access
import Loop
import Server
import Session
import SessionEngine

/// A GPT-Live session whose client is a WebRTC call (`POST /v1/live/sessions` with
/// `transport: {type: "webrtc", sdp}`): a `LiveSession` started with the offer's configuration as
/// the data channel opens (the client sends no `session.start`), its events on the data channel,
/// the caller's Opus in and the replies' Opus out on the media track.
package final class LiveWebRTCSession: WebRTCCallSession {
    private let session: LiveSession
    private let config: LiveSessionConfig
    private var opened = false
    package var onHangUp: (() -> Void)?

    init(endpoint: RealtimeEndpoint, request: HTTPRequest, admitted: Admitted, config: LiveSessionConfig) {
        var options = SessionEngine.Options(realtime: request, endpoint: endpoint, caller: admitted.caller, allowsOpus: true, restoring: nil)
        options.carryAudioOnACall(session: nil)
        self.config = config
        session = LiveSession(endpoint: endpoint, admitted: admitted, options: options, endpointName: "/v1/live/sessions (webrtc)",
                              traceparent: request.header("traceparent"))
    }

    package var sessionID: String { session.sessionID }

    package func open(_ call: any SessionSocket) {
        guard !opened else { return }
        opened = true
        session.open(call)
        session.start(config)
    }

    package func receive(text: UnsafeRawBufferPointer) {
        guard opened else { return }
        session.receive(text)
    }

    package func receive(opus packet: UnsafeRawBufferPointer) {
        guard opened else { return }
        session.hear { try $0.opus(packet) }
    }

    package func lost(next: UnsafeRawBufferPointer?) {
        guard opened else { return }
        session.hear { try $0.opusLost(next: next) }
    }

    package func ended(_ ending: SessionEnding) {
        onHangUp = nil
        session.close(ending)
    }

    // MARK: DirectedCall: the Live session's own (its sidebands, its hangup)

    package func attach(sideband: Handoff<WebSocket>, on remote: LoopHandle, id: ObjectIdentifier) { session.attach(sideband: sideband, on: remote, id: id) }
    package func detach(sideband id: ObjectIdentifier) { session.detach(sideband: id) }
    package func receive(sidebandText: String) { session.receive(sidebandText: sidebandText) }
    package func control(_ action: CallControl) { session.control(action) }
}
