import Access
import Codec
import Models
import Server
import Loop
import SpeechContracts
import SessionEngine

/// The models a session calls: the language model, the recogniser and the end-of-turn model,
/// each call started as the engine asks and its answers handed back to it.
extension SessionDriver {
    // MARK: End of turn


    func judgeTurn(_ step: TurnModelStep, on loop: EventLoop) {
        switch step {
        case .judge(let itemID):
            turnJudgement?.call.cancel()
            guard let model = endpoint.speech.endOfTurn else {
                turnJudgement = nil
                return perform(engine.handle(.turnVerdict(itemID: itemID, .failure(ModelError(code: "no_turn_model", message: "no end-of-turn model")))))
            }
            let asked = loopTime
            let (samples, sampleRate) = engine.turnModelAudio
            let audioMs = samples.count * 1000 / sampleRate
            let turn = TurnAudio(samples: samples, sampleRate: sampleRate, held: transcriptions[itemID]?.heldAudio)
            let call = model.judge(turn, on: loop) { [weak self] result in
                guard let self, self.turnJudgement?.itemID == itemID else { return }
                self.turnJudgement = nil
                switch result {
                case .success(let verdict):
                    self.metrics.turnModelTime.observe(nanoseconds: loopTime &- asked)
                    sessionLog.debug("turn judged", metadata: ["session": "\(self.engine.sessionID)", "item": "\(itemID)", "complete": "\(verdict.complete)",
                                                               "probability": "\(verdict.probability)", "audio_ms": "\(audioMs)"])
                case .failure(let error): self.metrics.turnModelFailures.add(1, error.failure == .timeout ? .timeout : .unavailable)
                }
                self.perform(self.engine.handle(.turnVerdict(itemID: itemID, result)))
            }
            turnJudgement = TurnJudgement(itemID: itemID, call: call)
        case .cancel(let itemID):
            guard turnJudgement?.itemID == itemID else { return }
            turnJudgement?.call.cancel()
            turnJudgement = nil
        }
    }

    // MARK: Transcription

    func transcribe(_ step: TranscriptionStep, on loop: EventLoop) {
        switch step {
        case .begin(let itemID, let audio, let sampleRate, let choice):
            guard let transcriber = endpoint.speech.transcriber else { return }
            let session = transcriber.begin(on: loop, sampleRate: sampleRate, choice: choice) { [weak self] event in self?.transcriptionEvent(itemID, event) }
            transcriptions[itemID] = session
            session.append(audio)
        case .audio(let itemID, let samples):
            transcriptions[itemID]?.append(samples)
        case .quiet(let itemID):
            transcriptions[itemID]?.quiet()
        case .spokeAgain(let itemID):
            transcriptions[itemID]?.spokeAgain()
        case .replyWaits(let itemID, let waits):
            transcriptions[itemID]?.replyWaits(waits)
        case .finish(let itemID):
            transcriptions[itemID]?.finish()
        case .cancel(let itemID):
            transcriptions.removeValue(forKey: itemID)?.cancel()
        }
    }

    func transcriptionEvent(_ itemID: String, _ event: TranscriptionEvent) {
        // What the user said is theirs: logged only at debug, for tracing a conversation.
        switch event {
        case .final(let text): sessionLog.debug("transcript", metadata: ["session": "\(engine.sessionID)", "item": "\(itemID)", "text": "\(text)"])
        case .settled(let text, _): sessionLog.debug("words at a quiet", metadata: ["session": "\(engine.sessionID)", "item": "\(itemID)", "text": "\(text)"])
        case .language(let language): sessionLog.debug("language heard", metadata: ["session": "\(engine.sessionID)", "item": "\(itemID)", "language": "\(language)"])
        case .partial, .failed: break
        }
        if case .failed(let error) = event {
            sessionLog.warning("transcription failed", metadata: ["session": "\(engine.sessionID)", "item": "\(itemID)", "error": "\(error.message)"])
        }
        switch event {
        case .final, .failed:
            if inFlight != nil, let took = clock.transcribed(at: loopTime), case .final = event {
                SpeechMetrics.shared.transcription.observe(nanoseconds: took)
            }
            transcriptions[itemID] = nil
        case .partial, .settled, .language: break
        }
        perform(engine.handle(.transcription(itemID: itemID, event)))
    }


    func callModel(_ id: String, _ messages: [ChatMessage], _ options: ModelOptions, on loop: EventLoop) {
        var request = ModelRequest(messages: messages, maxOutputTokens: options.maxOutputTokens, tools: options.tools, toolChoice: options.toolChoice)
        request.traceparent = trace?.modelCall(id, model: endpoint.modelName, at: loopTime)
        request.language = options.language
        calls[id] = endpoint.model.stream(request, on: loop) { [weak self] event in self?.modelEvent(id, event) }
    }

    /// The turn's model said its first words (or they were already there when its speculative
    /// reply was used).
    func modelAnswered(at now: UInt64) {
        guard inFlight != nil, clock.awaitsFirstToken else { return }
        clock.mark(.firstToken, at: now)
        // A text reply's timeline ends here; a spoken one goes on to its first frame.
        if !configuration.outputModalities.contains(.audio) || endpoint.speech.synthesizer == nil { observeTimeline() }
    }

    func modelEvent(_ id: String, _ event: ModelEvent) {
        // A speculative call's output is held by the engine until its turn ends, or dropped: not
        // yet the turn's words, so it marks no stage, and its failure is no one's to hear about.
        let speculative = id == engine.speculativeResponseID
        switch event {
        case .delta(let text):
            if !speculative { modelAnswered(at: loopTime) }
            perform(engine.handle(.modelDelta(responseID: id, text: text)))
        case .toolCallStarted(let index, let callID, let name):
            perform(engine.handle(.modelToolCallStarted(responseID: id, index: index, callID: callID, name: name)))
        case .toolCallArgumentsDelta(let index, let delta):
            perform(engine.handle(.modelToolCallArguments(responseID: id, index: index, delta: delta)))
        case .finished(let usage, let reason):
            calls[id] = nil
            perform(engine.handle(.modelFinished(responseID: id, usage: usage, reason: reason)))
        case .retrying(let upstream, let after):
            trace?.modelRetried(id, upstream: upstream, after: after, at: loopTime)
        case .failed(let error):
            calls[id] = nil
            trace?.modelFailed(id, code: error.code, at: loopTime)
            guard !speculative else {
                sessionLog.debug("speculative model call failed", metadata: ["session": "\(engine.sessionID)", "code": "\(error.code)"])
                return perform(engine.handle(.modelFailed(responseID: id, code: error.code, message: error.message)))
            }
            let replied = engine.hasSaidSomething(responseID: id)
            sessionLog.warning("model call failed", metadata: ["session": "\(engine.sessionID)", "response": "\(id)",
                                                               "code": "\(error.code)", "error": "\(error.message)"])
            guard error.retryable, let apology = endpoint.model.apology, let socket else {
                return perform(engine.handle(.modelFailed(responseID: id, code: error.code, message: error.message)))
            }
            // A passing fault: the client is told what failed, and the caller hears the apology
            // (after whatever the reply had said) rather than silence.
            UpstreamMetrics.shared.apologies.add(1)
            let told = EventError(type: .server, code: error.code, message: error.message)
            wire?.send(engine.event(.error(told)), on: socket)
            observe(.error(told))
            perform(engine.handle(.modelDelta(responseID: id, text: replied ? " " + apology : apology)))
            perform(engine.handle(.modelFinished(responseID: id, usage: nil)))
        }
    }
}
