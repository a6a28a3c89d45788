import Models
import SpeechContracts

/// The recogniser's words for the user's turns: partials sent as they grow (or held while the
/// speech has paused a reply), the final text into the conversation, and a response that waited
/// for it started.
package extension SessionEngine {
    mutating func cancelTranscription() {
        guard let itemID = turns.transcribing else { return }
        outbox.append(.transcription(.cancel(itemID: itemID)))
        turns.transcribing = nil
    }

    mutating func transcription(_ itemID: String, _ event: TranscriptionEvent) {
        let streaming = turns.transcribing == itemID
        guard streaming || turns.pendingTranscripts.contains(itemID) else { return }  // cancelled: late
        switch event {
        case .partial(let text, let confidence):
            if streaming, turns.floor.isPaused {
                // Unconfirmed speech: its words decide the paused reply's fate and are not sent yet.
                return pausedSpeechRecognised(text, confidence, settled: false)
            }
            partialArrived(itemID, text, settled: false)
        case .settled(let text, let confidence):
            if streaming, turns.floor.isPaused { return pausedSpeechRecognised(text, confidence, settled: true) }
            partialArrived(itemID, text, settled: true)
            // The words of the turn up to its silence: the text signal of its end, if no speech
            // came since (the VAD's last speech is still the one the recogniser was told of).
            if readsTurnWords, streaming, let speechEndMs = turns.quietSpeechEndMs, let vad,
               vadOriginMs + vad.lastSpeechEndMs == speechEndMs,
               let step = turns.floor.wordsHeard(itemID, text, speechEndMs: speechEndMs, nowMs: audio.totalMs) {
                carryOut(step)
            }
        case .final(let words):
            // Providers pad their text differently (an API's leading space); the user's message does not.
            let text = words.trimmed
            let spokenMs = conversation.entry(itemID)?.message.spokenMilliseconds ?? 0
            emit(.inputAudioTranscriptionCompleted(itemID: itemID, contentIndex: 0, transcript: text, audioSeconds: Double(spokenMs) / 1000,
                                                   language: configuration.language))
            fact(.transcript(itemID: itemID, text: text))
            if !text.isEmpty { conversation.setTranscript(text, of: itemID) }
            transcriptArrived(itemID, answer: true)
        case .language(let language):
            // Kept from the first turn it was found in; a language the session sets wins.
            if configuration.transcription.language == nil, configuration.heardLanguage == nil {
                settings.value.heardLanguage = language
            }
        case .failed where streaming && !turns.pendingTranscripts.contains(itemID):
            // The turn is still going (the recogniser failed mid-stream: a helper that died): it
            // is sent whole again when it ends, and only a failure then is the item's to report,
            // after the item exists.
            turns.transcribing = nil
        case .failed(let error):
            let eventError = EventError(type: .server, code: error.code, message: error.message)
            emit(.inputAudioTranscriptionFailed(itemID: itemID, contentIndex: 0, error: eventError))
            // Overloaded: the turn is refused, said as an error, rather than answered blind.
            let overloaded = error.code == "overloaded"
            if overloaded { emit(.error(eventError)) }
            transcriptArrived(itemID, answer: !overloaded)
        }
    }

    /// Words of the speech that paused the reply: a barge-in, the reply resumed (the speech had
    /// ended, and its words are backchannels or too few), or nothing yet.
    private mutating func pausedSpeechRecognised(_ text: String, _ confidence: DecodeConfidence?, settled: Bool) {
        switch turns.floor.recognised(text, confidence: confidence, settled: settled) {
        case .bargeIn: bargeIn()
        case .resume(_, let why): resumePausedReply(why)
        case .held, .delivered: break
        }
    }

    mutating func partialArrived(_ itemID: String, _ text: String, settled: Bool) {
        turns.heardWords = text
        turns.heardWordsSettled = settled
        // Only growth is sent: a hypothesis that rewrites earlier words waits for the final.
        let sent = turns.partialTranscript
        if text.hasPrefix(sent), text.count > sent.count {
            emit(.inputAudioTranscriptionDelta(itemID: itemID, contentIndex: 0, delta: String(text.dropFirst(sent.count))))
            turns.partialTranscript = text
        }
        // Words heard while the model weighs a silence: what a speculative reply should read.
        if turns.floor.isEndPending { speculate() }
    }

    mutating func transcriptArrived(_ itemID: String, answer: Bool) {
        turns.pendingTranscripts.removeAll { $0 == itemID }
        if turns.transcribing == itemID { turns.transcribing = nil }
        if !answer {
            dropSpeculation(.cancelled)
            // No reply is coming for it: nothing to reopen.
            if turns.reopenable?.itemID == itemID { turns.reopenable = nil }
        }
        guard turns.pendingTranscripts.isEmpty, let overrides = turns.deferredResponse else { return }
        turns.deferredResponse = nil
        if answer && turns.response == nil { startResponse(overrides) }
    }
}
