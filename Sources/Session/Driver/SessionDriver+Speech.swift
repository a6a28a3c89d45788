import Access
import Codec
import Models
import Server
import Loop
import SpeechContracts
import SessionEngine

/// The reply spoken: its speech output made, paused, resumed and stopped as the engine says,
/// its audio sent, and the turn's timeline observed at its first frame.
extension SessionDriver {
    // MARK: Speech

    func speak(_ step: SpeechStep, on socket: any SessionSocket) {
        switch step {
        case .text(let at, let voice, let format, let piece):
            if speechOutputs[at.responseID] == nil {
                guard let synthesizer = endpoint.speech.synthesizer, let pool = endpoint.speech.pool,
                      let output = try? SpeechOutput(location: at, voice: voice, format: format, synthesizer: synthesizer, pool: pool, loop: socket.loop,
                                                     referenceRate: echoGuardOn || recorder != nil ? inputRate : nil,
                                                     inbandFEC: wire?.carriesLossyMedia == true,
                                                     send: { [weak self] piece in self?.sendAudio(piece, at) },
                                                     report: { [weak self] event in self?.speechEvent(at.responseID, event) })
                else { return }
                if wire?.resendsAfterPause == true { output.retainedMs = SpeechOutput.resendWindowMs }
                output.leadMs = endpoint.speech.replyLeadMs
                if echoGuardOn || recorder != nil { output.onPlayed = { [weak self] samples, playsAt in self?.replyPlayed(samples, at: playsAt) } }
                let stoppedAt = inFlight == nil ? nil : clock.takeReplyTurnStoppedAt()
                output.onFirstSentence = { [weak self] in self?.mark(.firstSentence) }
                output.onFirstSynthesized = { [weak self] in self?.mark(.firstAudio) }
                output.onFirstAudio = { [weak self] in
                    if let stoppedAt, let self { SpeechMetrics.shared.voiceToVoice.observe(nanoseconds: self.loopTime &- stoppedAt) }
                    self?.mark(.firstFrame)
                    self?.observeTimeline()
                    self?.speechEvent(at.responseID, .audible)
                }
                if preparedSpeech?.responseID == at.responseID {
                    output.prepared = preparedSpeech
                    preparedSpeech = nil
                }
                speechOutputs[at.responseID] = output
                if engine.pausedResponseID == at.responseID { output.pause(rewindToMs: wire?.speechPaused(responseID: at.responseID, on: socket)) }
            }
            speechOutputs[at.responseID]?.add(piece)
        case .prepare(let id, let voice, let piece):
            dropPreparedSpeech()
            guard let synthesizer = endpoint.speech.synthesizer else { return }
            let counted = metrics.preparedSpeech
            preparedSpeech = PreparedSpeech(responseID: id, text: piece, voice: voice, synthesizer: synthesizer, on: socket.loop) { counted.add(1, $0) }
        case .end(let id):
            if let output = speechOutputs[id] { output.end() } else { speechEvent(id, .finished) }
        case .pause(let id):
            if let output = speechOutputs[id] {
                let rewound = wire?.speechPaused(responseID: id, on: socket)
                // A listener whose queue was cleared never hears what was sent ahead.
                if rewound != nil { recorder?.cutAgent(at: loopTime) }
                output.pause(rewindToMs: rewound)
            }
        case .resume(let id, _):
            speechOutputs[id]?.resume()
        case .stop(let id):
            guard let output = speechOutputs.removeValue(forKey: id) else { return }
            // What was sent ahead of its playing time is cut from the listener's ears, and so
            // from the recording.
            recorder?.cutAgent(at: loopTime)
            let (played, heard) = output.stop(heardMs: wire?.heardMs(of: id))
            wire?.speechStopped(responseID: id, on: socket)
            sessionLog.debug("reply interrupted", metadata: ["session": "\(engine.sessionID)", "response": "\(id)", "heard_ms": "\(played)"])
            speechEvent(id, .interrupted(itemID: output.location.itemID, playedMs: played, heard: heard))
        }
    }

    /// The speculative reply's sound made ahead will not be heard: its synthesis is stopped.
    func dropPreparedSpeech() {
        guard let prepared = preparedSpeech else { return }
        prepared.cancel()
        preparedSpeech = nil
    }

    func sendAudio(_ piece: SpeechOutput.Piece, _ at: ContentLocation) {
        guard let socket else { return }
        wire?.sendAudio(piece, at: at, on: socket)
        if let ms = speechOutputs[at.responseID]?.pieceMs { observe(.replyAudio(milliseconds: ms)) }
    }

    func speechEvent(_ id: String, _ event: SpeechOutputEvent) {
        if case .finished = event { speechOutputs[id] = nil }
        perform(engine.handle(.speechOutput(responseID: id, event)))
    }

    /// A stage of the current turn passed.
    func mark(_ stage: TurnTimeline.Mark) {
        if inFlight != nil { clock.mark(stage, at: loopTime) }
    }

    func observeTimeline() {
        guard inFlight != nil, let turn = clock.takeTimeline() else { return }
        for (stage, seconds) in turn.stageSeconds() { metrics.turnStages[stage]?.observe(seconds: seconds) }
        observe(.turnTimed(itemID: turn.itemID, responseID: turn.responseID, stages: turn.namedStages))
        trace?.stages(turn)
        if configuration.includesTimeline, let socket { wire?.send(engine.makeEvent(turn.eventKind), on: socket) }
    }
}
