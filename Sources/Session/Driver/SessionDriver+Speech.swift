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
                guard let synthesizer = endpoint.speech.synthesizer,
                      let output = output(at, voice: voice, format: format, synthesizer: synthesizer, on: socket,
                                          report: { [weak self] event in self?.speechEvent(at.responseID, event) })
                else { return }
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

    /// A speech output for `at`, paced and encoded on the speech workers, its audio to the wire
    /// (and, when the echo guard or a recording listens, to them as it plays); nil without workers.
    private func output(_ at: ContentLocation, voice: SpeechVoice, format: RealtimeAudioFormat, synthesizer: any Synthesizer, on socket: any SessionSocket,
                        report: @escaping (SpeechOutputEvent) -> Void) -> SpeechOutput? {
        guard let pool = endpoint.speech.pool,
              let output = try? SpeechOutput(location: at, voice: voice, format: format, synthesizer: synthesizer, pool: pool, loop: socket.loop,
                                             referenceRate: echoGuardOn || recorder != nil ? inputRate : nil,
                                             inbandFEC: wire?.carriesLossyMedia == true,
                                             send: { [weak self] piece in self?.sendAudio(piece, at) }, report: report)
        else { return nil }
        if wire?.resendsAfterPause == true { output.retainedMs = SpeechOutput.resendWindowMs }
        output.pulledByLeg = wire?.pullsReplies == true
        output.leadMs = endpoint.speech.replyLeadMs
        if echoGuardOn || recorder != nil { output.onPlayed = { [weak self] samples, playsAt in self?.replyPlayed(samples, at: playsAt) } }
        return output
    }

    /// The application's own audio (a GPT-Live fixture, `id` its own) played as a reply is, in the
    /// session's output format through its carrier, but not the engine's: no item, no transcript,
    /// no barge-in (the input is muted meanwhile). `done` runs once, on the loop: true when it has
    /// all been sent, false when it cannot be played (a server without speech workers).
    func playAudio(_ samples: [Int16], rate: Int, id: String, done: @escaping (Bool) -> Void) {
        guard let socket,
              let output = output(ContentLocation(responseID: id, itemID: id), voice: SpeechVoice(name: "fixture"), format: configuration.outputAudioFormat,
                                  synthesizer: FixedAudio(samples: samples, rate: rate), on: socket,
                                  report: { [weak self] event in
                                      // Whichever comes first ends it (a failure stops the output, so no finish follows).
                                      switch event {
                                      case .finished:
                                          if self?.speechOutputs.removeValue(forKey: id) != nil { done(true) }
                                      case .failed:
                                          if let output = self?.speechOutputs.removeValue(forKey: id) { _ = output.stop(); done(false) }
                                      default: break
                                      }
                                  })
        else { return done(false) }
        speechOutputs[id] = output
        output.add(id)
        output.end()
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

extension SessionDriver {
    /// For a leg that takes the replies' pieces itself, a tick at a time (`MediaLeg.pullsReplies`):
    /// the next piece of the speech playing goes now, through the wire as any piece does; false
    /// when none is ready (the leg sends silence).
    package func pullReply() -> Bool {
        // Most ticks of most calls: no reply is playing.
        if speechOutputs.isEmpty { return false }
        for output in speechOutputs.values where output.pull() { return true }
        return false
    }
}
