import Models
import SpeechContracts

/// The user's turns: audio in, the detector's events to `TurnTaking`, and its decisions carried
/// out (the events, the commit, the reply paused, resumed or cut, the end-of-turn model asked).
package extension SessionEngine {
    // MARK: Audio

    mutating func receive(_ samples: [Int16]) {
        guard !samples.isEmpty else { return }
        // Audio of a turn already streaming goes to the recogniser; a turn that starts in this
        // piece gets it with its beginning.
        if let itemID = turns.transcribing { outbox.append(.transcription(.audio(itemID: itemID, samples))) }
        if vad == nil, let settings = configuration.turnDetection {
            vad = VoiceActivity(model: voiceActivityModel, sampleRate: audio.sampleRate, settings: detectorSettings(settings), batched: batchesVoiceActivity)
            vadOriginMs = audio.totalMs
        }
        let wasNeural = vad?.isNeural ?? false
        let events = vad?.process(samples) ?? []
        // The model could make no stream for this session: the energy detector took over, with
        // its clock starting at these samples.
        if wasNeural, vad?.isNeural == false { vadOriginMs = audio.totalMs }
        audio.append(samples)
        detected(events)
    }

    /// The loop's batch has scored this session's windows (`SessionInput.voiceActivityScored`).
    mutating func voiceActivityScored() {
        guard vad != nil else { return }
        detected(vad?.scored() ?? [])
    }

    /// What the detector said of the audio so far, and the rules that read it: the turn's start and
    /// stop, a barge-in or a resumed reply, the quiet, the end pending.
    private mutating func detected(_ events: [VoiceActivityDetector.Event]) {
        for event in events {
            switch event {
            case .speechStarted(let ms): speechStarted(atMs: vadOriginMs + ms)
            case .speechStopped(let ms): speechStopped(atMs: vadOriginMs + ms)
            }
        }
        if turns.floor.isPaused, let vad, turns.floor.lastsLongEnough(lastSpeechEndMs: vadOriginMs + vad.lastSpeechEndMs) {
            bargeIn()
        }
        if turns.floor.isPaused, case .resume(_, let why)? = turns.floor.pauseDue(atMs: audio.totalMs) { resumePausedReply(why) }
        if let vad {
            tellQuiet(speechEndMs: vadOriginMs + vad.lastSpeechEndMs)
            tellSpokeAgain(speechEndMs: vadOriginMs + vad.lastSpeechEndMs)
        }
        // Read first: the mutating call would make the turns' box on every frame between turns
        // (`OutOfLine` makes it on a write), only for `settle` to free it again.
        if turns.floor.isEndPending, let step = turns.floor.audio(atMs: audio.totalMs) { carryOut(step) }
        checkIdleTimeout()
        if let vad, turns.floor.isIdle {
            // Between turns only what the next start may reach back for is worth keeping: the
            // padding, the detector's look-back of up to 130 ms and a frame (200 ms), counted back
            // from the audio it has scored: the audio after that (`unscoredMs`: windows waiting
            // for the loop's batch) is all kept. Counted from the end of what came, it lost a
            // turn's first words whenever a pass brought more than 500 ms before the batch scored
            // it (make test in three lanes, 2026-11-28: "like in Paris today." for "What's the
            // weather like in Paris today?"). `InputAudioBuffer.keepLast` says what this holds:
            // 23 KiB at 16 kHz with the default 300 ms of padding, the detector caught up.
            audio.keepLast(ms: vad.settings.prefixPaddingMs + Self.lookBackMs + vad.unscoredMs)
        }
    }

    /// Audio kept between turns before the scored audio's end, beyond the padding: the detector's
    /// look-back (a run's start before its first loud window) and a frame.
    static let lookBackMs = 200

    /// The quiet after speech that has the recogniser decode the turn so far: shorter than any
    /// stop (semantic_vad's 200 ms probe, server_vad's 500 ms), so that the decode is under way,
    /// or done, when the turn ends; long enough that a stop consonant's gap is not taken for it.
    static let quietMs = 120

    /// Tells the recogniser, once per quiet, that the speaker went on after it: the decode asked
    /// for at the quiet no longer ends the turn, and one that has not begun need not be made (a
    /// clause's pause costs a whole decode otherwise; at twenty talkers, decodes waited seconds).
    private mutating func tellSpokeAgain(speechEndMs: Int) {
        guard let itemID = turns.transcribing, let quiet = turns.quietSpeechEndMs, speechEndMs > quiet,
              turns.spokeAgainAfterMs != quiet else { return }
        turns.spokeAgainAfterMs = quiet
        outbox.append(.transcription(.spokeAgain(itemID: itemID)))
        if turns.floor.isPaused { turns.floor.spokeAgain() }
    }

    /// The speech that paused the reply was no turn: its transcription is dropped and the reply goes on.
    mutating func resumePausedReply(_ why: ReplyInterruption.Resumption) {
        cancelTranscription()
        resumeReply(why)
    }

    /// Tells the recogniser, once per silence, that the turn has gone quiet after speech that
    /// ended at `speechEndMs`.
    private mutating func tellQuiet(speechEndMs: Int) {
        guard let itemID = turns.transcribing, let turn = turns.floor.turn, turn.itemID == itemID,
              speechEndMs > turn.onsetMs, audio.totalMs - speechEndMs >= Self.quietMs,
              turns.quietSpeechEndMs != speechEndMs else { return }
        turns.quietSpeechEndMs = speechEndMs
        outbox.append(.transcription(.quiet(itemID: itemID)))
    }

    /// `idle_timeout_ms`: the user said nothing for that long after a response. The silence is
    /// committed as a turn and answered, so the model can ask whether anyone is still there.
    mutating func checkIdleTimeout() {
        guard configuration.type == .realtime, let timeout = configuration.turnDetection?.idleTimeoutMs, let since = idleSinceMs, turns.floor.isIdle,
              turns.response == nil, turns.pendingTranscripts.isEmpty, audio.totalMs - since >= timeout else { return }
        idleSinceMs = nil
        let itemID = ids.make("item")
        emit(.inputAudioTimeoutTriggered(audioStartMs: since, audioEndMs: audio.totalMs, itemID: itemID))
        commit(itemID: itemID, spokenMs: 0)
        if configuration.turnDetection?.createResponse ?? true { startResponse(ResponseOverrides()) }
    }

    // MARK: Speech starts and stops

    mutating func speechStarted(atMs ms: Int) {
        let new = TurnTaking.Turn(itemID: ids.make("item"), onsetMs: vadOriginMs + (vad?.speechOnsetMs ?? 0), audioStartMs: ms)
        let reply: ReplyInterruption.Reply = turns.response.map { $0.speaks ? .spoken : .text } ?? .none
        let settings = configuration.turnDetection ?? ServerVAD()
        let reopenable = turns.reopenable.flatMap { unheardReply(answering: $0.itemID) ? $0 : nil }
        turns.reopenable = nil
        let start = turns.floor.speechStarted(new, during: reply, interruptResponse: settings.interruptResponse,
                                              settings: settings.interruption, expectsWords: transcribes,
                                              settledWords: settledWords, narrowband: configuration.inputAudioFormat.g711Law != nil,
                                              replyUnheard: reopenable != nil, language: configuration.language)
        if case .reopened(let turn, let withdrawn) = start, let reopenable {
            return reopen(turn, withdrawing: withdrawn, audio: reopenable.samples, speechStartMs: ms)
        }
        guard case .began(let turn, let decision) = start else {
            // The user went on after a silence the model was judging: the same turn continues,
            // and a reply begun on its words so far is not what it will need.
            if let speculation = turns.speculation {
                turns.outspokenWords = OutspokenWords(itemID: speculation.itemID, words: SpeculativeReply.words(speculation.transcript))
            }
            dropSpeculation(.cancelled)
            if case .continued(let withdraw?) = start { carryOut(withdraw) }
            return
        }
        idleSinceMs = nil
        audio.keep(fromMs: ms)
        if decision == .pause, let response = turns.response {
            // Not yet a turn: no event until it is confirmed, since clients flush their playback
            // on `speech_started`. The reply's audio is held, the response stays alive.
            fact(.replyPaused(responseID: response.id))
            emit(.replyPaused(responseID: response.id))
            outbox.append(.speech(.pause(responseID: response.id)))
        } else {
            announce(turn)
        }
        // Streamed from the start either way: a paused reply's fate may hang on the words.
        beginTranscription(turn.itemID)
        if decision == .pause, turns.transcribing == turn.itemID { outbox.append(.transcription(.replyWaits(itemID: turn.itemID, true))) }
        if decision == .bargeIn { cutReply() }
    }

    /// The recogniser hears the turn `itemID` from its start: the audio held now, then each piece.
    private mutating func beginTranscription(_ itemID: String) {
        guard transcribes else { return }
        cancelTranscription()
        turns.transcribing = itemID
        turns.partialTranscript = ""
        turns.heardWords = ""
        turns.heardWordsSettled = false
        turns.quietSpeechEndMs = nil
        turns.spokeAgainAfterMs = nil
        outbox.append(.transcription(.begin(itemID: itemID, audio: audio.samples, sampleRate: audio.sampleRate, choice: configuration.hearing)))
    }

    /// Whether the reply in the making answers the item `itemID` and nothing of it has reached the
    /// listener: a spoken one whose first audio has not gone out, a text one with no text yet, or
    /// one still waiting for the item's words.
    private func unheardReply(answering itemID: String) -> Bool {
        guard let response = turns.response else { return turns.deferredResponse != nil && turns.pendingTranscripts.contains(itemID) }
        return response.speaks ? !response.audible : !response.itemStarted
    }

    /// The user went on after their turn had ended, before its reply was heard: the reply is
    /// withdrawn (cancelled, its item deleted), the ended turn's item deleted, and the turn goes
    /// on as a new item whose audio is the ended turn's and the new speech's (docs/protocol.md,
    /// "A turn that reopens").
    private mutating func reopen(_ turn: TurnTaking.Turn, withdrawing withdrawn: String, audio earlier: [Int16], speechStartMs ms: Int) {
        idleSinceMs = nil
        fact(.turnReopened(itemID: turn.itemID, withdrawnItemID: withdrawn))
        if let response = turns.response {
            let replyItem = response.itemStarted ? response.itemID : nil
            cancel(response.id, reason: "turn_detected")
            if let replyItem, conversation.delete(replyItem) { emit(.conversationItemDeleted(itemID: replyItem)) }
        }
        turns.deferredResponse = nil
        turns.turnAwaitingResponse = false
        if turns.pendingTranscripts.contains(withdrawn) {
            outbox.append(.transcription(.cancel(itemID: withdrawn)))
            turns.pendingTranscripts.removeAll { $0 == withdrawn }
        }
        if conversation.delete(withdrawn) { emit(.conversationItemDeleted(itemID: withdrawn)) }
        audio.keep(fromMs: ms)
        audio.prepend(earlier)
        announce(turn)
        beginTranscription(turn.itemID)
    }

    /// The user spoke over the reply: it is cancelled, and truncated at what was heard.
    private mutating func cutReply() {
        guard let response = turns.response else { return }
        fact(.bargedIn(responseID: response.id))
        cancel(response.id, reason: "turn_detected")
    }

    private mutating func announce(_ turn: TurnTaking.Turn) {
        emit(.speechStarted(audioStartMs: turn.audioStartMs, itemID: turn.itemID))
        fact(.turnBegan(itemID: turn.itemID, audioStartMs: turn.audioStartMs))
    }

    private mutating func speechStopped(atMs ms: Int) {
        var semantic = judgesTurns ? configuration.turnDetection?.semanticEagerness?.turnEnding(readsWords: readsTurnWords, tuning: turnTuning) : nil
        if turns.noisyLine { semantic?.noisyInput = true }
        switch turns.floor.speechStopped(atMs: ms, semantic: semantic) {
        case nil: break
        case .resume(_, let why)?: resumePausedReply(why)
        case .step(let step)?: carryOut(step)
        }
    }

    /// The speech that paused the reply is a barge-in: it is announced as the turn it is
    /// (`speech_started`, with the start it had), then the response is cancelled and the reply
    /// truncated at what was heard, exactly as an immediate barge-in does.
    mutating func bargeIn() {
        confirmPausedTurn(cuttingTheReply: true)
    }

    /// The reply the speech had paused ended (a client's cancel, a failure): with no reply left
    /// to protect, the speech is the turn it would have been.
    mutating func replyEndedUnderSpeech() {
        confirmPausedTurn(cuttingTheReply: false)
    }

    /// The paused speech is announced as a turn, the reply cut if asked, and the words it had,
    /// held back until now, sent.
    private mutating func confirmPausedTurn(cuttingTheReply: Bool) {
        guard let announced = turns.floor.confirm() else { return }
        if turns.transcribing == announced.turn.itemID { outbox.append(.transcription(.replyWaits(itemID: announced.turn.itemID, false))) }
        announce(announced.turn)
        if cuttingTheReply { cutReply() }
        if let words = announced.heldWords, turns.transcribing == announced.turn.itemID { partialArrived(announced.turn.itemID, words, settled: false) }
    }

    /// The paused reply goes on. When the speech that paused it ended unconfirmed (a backchannel,
    /// a noise, a short sound) it leaves nothing behind: no event was sent for it, so none is; its
    /// audio is dropped with the padding kept between turns, its transcription cancelled (by the
    /// caller), and no item is made, so the model never answers "uh-huh".
    mutating func resumeReply(_ why: ReplyInterruption.Resumption) {
        guard let response = turns.response else { return }
        fact(.replyResumed(responseID: response.id, why))
        emit(.replyResumed(responseID: response.id, reason: why == .backchannel ? "backchannel" : "short"))
        outbox.append(.speech(.resume(responseID: response.id, why)))
    }

    /// The turn in progress is dropped without being a turn (its audio cleared, the input's rate
    /// or turn detection changed): a question about its end is withdrawn and a reply it paused
    /// resumes. True if there was one.
    @discardableResult
    mutating func dropTurn() -> Bool {
        dropSpeculation(.cancelled)
        let (dropped, withdraw, resumes) = turns.floor.drop()
        if let withdraw { carryOut(withdraw) }
        if resumes { resumeReply(.short) }
        return dropped
    }

    // MARK: The end of the turn

    /// Carries out what turn-taking decided about the turn's end.
    mutating func carryOut(_ step: TurnTaking.Step) {
        switch step {
        case .ask(let itemID):
            outbox.append(.turnModel(.judge(itemID: itemID)))
            speculate()
        case .withdraw(let itemID):
            outbox.append(.turnModel(.cancel(itemID: itemID)))
        case .end(let ended):
            endTurn(ended)
        }
    }

    /// The audio the end-of-turn model judges: the buffer's last 8 s, a view of it, not a copy
    /// (read while the model is asked, before the buffer changes again).
    var turnModelAudio: (samples: ArraySlice<Int16>, sampleRate: Int) {
        (audio.samples.suffix(TurnEnding.maxSeconds * audio.sampleRate), audio.sampleRate)
    }

    /// The turn is over: `speech_stopped` where its speech ended, the commit, and the answer.
    mutating func endTurn(_ ended: TurnTaking.Ended) {
        let itemID = ended.turn.itemID
        emit(.speechStopped(audioEndMs: ended.atMs, itemID: itemID))
        fact(.turnEnded(itemID: itemID, audioEndMs: ended.atMs, cause: ended.cause))
        let samples = commit(itemID: itemID, spokenMs: ended.atMs - ended.turn.onsetMs)
        // A transcription session's turn ends with its transcript; no model is ever asked.
        guard configuration.type == .realtime, configuration.turnDetection?.createResponse ?? true else { return dropSpeculation(.cancelled) }
        if turns.response == nil {
            // Kept while its reply is unheard, should the user go on (`reopen`).
            turns.reopenable = Reopenable(itemID: itemID, samples: samples)
            startResponse(ResponseOverrides())
        } else {
            turns.turnAwaitingResponse = true
        }
    }

    /// The model's answer about the turn `itemID` (a late one, for a turn that went on or ended, is dropped).
    mutating func turnVerdict(_ itemID: String, _ result: Result<TurnVerdict, ModelError>) {
        guard turns.floor.turn?.itemID == itemID, let step = turns.floor.verdict(itemID, result, nowMs: audio.totalMs) else { return }
        carryOut(step)
    }

    /// Whatever the model was asked about the turn is no longer wanted.
    mutating func forgetEnding() {
        dropSpeculation(.cancelled)
        if let withdraw = turns.floor.forgetEnding() { carryOut(withdraw) }
    }

    /// Answers the turn that waited for a response to end, once nothing stands in its way: no
    /// response in flight, and the user not speaking (a turn in progress gets its own response
    /// when it ends, which covers the waiting one too).
    mutating func answerWaitingTurn() {
        guard turns.turnAwaitingResponse, turns.response == nil, turns.floor.isIdle else { return }
        turns.turnAwaitingResponse = false
        if configuration.turnDetection?.createResponse == true { startResponse(ResponseOverrides()) }
    }

    /// Makes the buffered audio a user item. The samples are released here; a transcriber, when
    /// there is one, will take them first.
    @discardableResult
    mutating func commit(itemID: String, spokenMs: Int) -> [Int16] {
        let previous = conversation.lastItemID
        // The item's events go before the recogniser is told to finish: a recogniser whose last
        // decode already covers the turn answers at once, inside this action list, and its
        // `…transcription.completed` must follow `committed` and the item, as the API orders them.
        emit(.inputAudioCommitted(itemID: itemID, previousItemID: previous))
        fact(.userItem(itemID: itemID, text: nil))
        let item = ConversationItem(id: itemID, role: .user, status: .completed, content: [.inputAudio(transcript: nil)])
        emit(.conversationItemCreated(item, previousItemID: previous))
        emit(.conversationItemDone(item, previousItemID: previous))
        if transcribes {
            // A turn committed by hand was not streaming: all its audio goes now.
            if turns.transcribing != itemID {
                cancelTranscription()
                outbox.append(.transcription(.begin(itemID: itemID, audio: audio.samples, sampleRate: audio.sampleRate, choice: configuration.hearing)))
            }
            outbox.append(.transcription(.finish(itemID: itemID)))
            turns.transcribing = nil
            turns.pendingTranscripts.append(itemID)
        }
        let samples = audio.take()
        conversation.append(id: itemID, ChatMessage.untranscribedSpeech(milliseconds: max(0, spokenMs)), audio: true)
        return samples
    }
}
