import Loop

/// The turns: when each session's is due, the session.update it needs first, what a text, weather
/// or spoken turn sends, the tool outputs and the cut of a spoken reply, and what is sent again
/// once a resume's replay is over.
extension SurviveRun {
    func sendDue(_ now: UInt64) {
        while true {
            let due = scheduleStart + offsets[nextSlot] + round * interval
            guard due <= now, due < scheduleEnd else { return }
            // A tenant session still refused was never there to take its turn: not a skip.
            if sessions[nextSlot].pendingTurn && sessions[nextSlot].everOpened { counts.turnsSkipped += 1 }
            sessions[nextSlot].pendingTurn = true
            startTurnIfFree(nextSlot, now)
            nextSlot += 1
            if nextSlot == offsets.count {
                nextSlot = 0
                round += 1
            }
        }
    }

    /// What a session sets at open, or nil when the defaults do: a spoken session turns turn
    /// detection off (push to talk: it commits each turn itself) and asks for spoken replies in
    /// pcm16 at 24 kHz; with --tools, every session declares get_weather.
    func sessionUpdate(_ slot: Int) -> String? {
        let tools = settings.tools ? "," + SurviveToolTurn.sessionTools : ""
        if speaks(slot) {
            return #"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"],"audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"turn_detection":null},"output":{"format":{"type":"audio/pcm","rate":24000}}}"#
                + tools + "}}"
        }
        return settings.tools ? #"{"type":"session.update","session":{"type":"realtime""# + tools + "}}" : nil
    }

    /// At session.created: the session.update, whose session.updated lets the turns begin.
    func configure(_ slot: Int, on connection: ClientConnection) {
        guard let update = sessionUpdate(slot) else {
            sessions[slot].configured = true
            return
        }
        sessions[slot].updateSent = true
        send(update, on: connection)
    }

    func startTurnIfFree(_ slot: Int, _ now: UInt64) {
        guard sessions[slot].pendingTurn, sessions[slot].state == .ready, !sessions[slot].inReplay, sessions[slot].replayLeft == 0, sessions[slot].configured,
              sessions[slot].turnSentAt == 0, let connection = sessions[slot].connection else { return }
        sessions[slot].pendingTurn = false
        sessions[slot].turns += 1
        let n = sessions[slot].turns
        let kind: SurviveSession.TurnKind = speaks(slot) ? .spoken : settings.tools && n % 3 == 0 ? .weather : .text
        sessions[slot].turnKind = kind
        // A spoken turn's item is named by the server when it commits the audio.
        sessions[slot].turnItemID = kind == .spoken ? "" : "u\(slot)t\(n)"
        sessions[slot].turnSentAt = now
        sessions[slot].turnUserSeen = false
        sessions[slot].turnResponseSeen = false
        sessions[slot].turnNudged = false
        sessions[slot].turnStory.begin("sent \(kind) turn \(n)\(kind == .spoken ? "" : " as " + sessions[slot].turnItemID)", at: now)
        sessions[slot].turnDeadline = now + deadline(kind)
        sessions[slot].tool = kind == .weather ? SurviveToolTurn(outputPrefix: "o\(slot)t\(n)") : nil
        sessions[slot].reply = kind == .spoken ? SurviveSession.SpokenReply(cutDue: settings.cutEvery > 0 && n % settings.cutEvery == 0) : nil
        counts.turnsSent += 1
        switch kind {
        case .text: break
        case .weather: counts.toolTurnsSent += 1
        case .spoken: counts.spokenTurnsSent += 1
        }
        sendTurn(slot, again: false, on: connection)
    }

    func deadline(_ kind: SurviveSession.TurnKind) -> UInt64 {
        (kind == .spoken ? Self.spokenTurnSeconds : Self.textTurnSeconds) * 1_000_000_000
    }

    /// The user's part of the turn, and the response.create. `again`: after a resume or a nudge,
    /// when the server never had it; a spoken turn clears the input buffer first, which may hold
    /// part of the audio sent before the drop.
    func sendTurn(_ slot: Int, again: Bool, on connection: ClientConnection) {
        let n = sessions[slot].turns
        switch sessions[slot].turnKind {
        case .text, .weather:
            let text = sessions[slot].turnKind == .weather ? SurviveToolTurn.prompt(n) : TurnsTools.turnText(n)
            send(#"{"type":"conversation.item.create","item":{"id":"\#(sessions[slot].turnItemID)","type":"message","role":"user","content":[{"type":"input_text","text":"\#(text)"}]}}"#, on: connection)
        case .spoken:
            guard let clip = speech?.clip(slot: slot, turn: n) else { return }
            if again { send(#"{"type":"input_audio_buffer.clear"}"#, on: connection) }
            for append in clip.appends { send(append, on: connection) }
            send(#"{"type":"input_audio_buffer.commit"}"#, on: connection)
        }
        sendResponseCreate(slot, on: connection)
    }

    func sendResponseCreate(_ slot: Int, on connection: ClientConnection) {
        if sessions[slot].turnKind == .spoken {
            send(#"{"type":"response.create","response":{"output_modalities":["audio"]}}"#, on: connection)
        } else {
            send(#"{"type":"response.create","response":{"output_modalities":["text"]}}"#, on: connection)
        }
    }

    /// A turn unanswered 20 s after it was sent (45 s for a spoken one), or after the session last
    /// came back, gets its response.create once more; as long again after that it is counted
    /// unanswered.
    func turnTimeouts(_ now: UInt64) {
        for slot in 0..<count where sessions[slot].turnSentAt != 0 && sessions[slot].turnDeadline <= now && sessions[slot].state == .ready {
            if !sessions[slot].turnNudged, !sessions[slot].turnResponseSeen, let connection = sessions[slot].connection {
                sessions[slot].turnNudged = true
                sessions[slot].turnDeadline = now + deadline(sessions[slot].turnKind)
                counts.responsesNudged += 1
                sessions[slot].turnStory.note(sessions[slot].turnUserSeen ? "nudged: response.create again" : "nudged: the turn again", at: now)
                if sessions[slot].turnUserSeen {
                    sendResponseCreate(slot, on: connection)
                } else {
                    sendTurn(slot, again: true, on: connection)
                }
            } else {
                counts.turnsUnanswered += 1
                sessions[slot].turnStory.note("counted unanswered (user item seen: \(sessions[slot].turnUserSeen), a response seen: \(sessions[slot].turnResponseSeen))", at: now)
                if counts.unansweredExamples.count < 5 { counts.unansweredExamples.append("session \(slot): \(sessions[slot].turnStory.text)") }
                sessions[slot].turnSentAt = 0
            }
        }
    }

    /// The replay after session.resumed is over: what the server never received is sent again (the
    /// session.update, the turn, tool outputs, a cut's cancel and truncate, its retrieve).
    func replayFinished(_ slot: Int, _ now: UInt64) {
        sessions[slot].inReplay = false
        guard let connection = sessions[slot].connection else { return }
        // Setting the same fields twice changes nothing.
        if sessions[slot].updateSent, !sessions[slot].configured, let update = sessionUpdate(slot) { send(update, on: connection) }
        resendCuts(slot, on: connection)
        guard sessions[slot].turnSentAt != 0 else { return startTurnIfFree(slot, now) }
        sessions[slot].turnDeadline = now + deadline(sessions[slot].turnKind)
        sessions[slot].turnStory.note("replay over (user item seen: \(sessions[slot].turnUserSeen))", at: now)
        if !sessions[slot].turnUserSeen {
            counts.turnsResent += 1
            if sessions[slot].turnKind == .spoken { counts.spokenTurnsResent += 1 }
            return sendTurn(slot, again: true, on: connection)
        }
        if var tool = sessions[slot].tool {
            let steps = tool.resumed()
            sessions[slot].tool = tool
            perform(steps, slot, now, on: connection)
        }
        // Audio that reached the cut's point in the replay: the user presses stop now.
        if let reply = sessions[slot].reply, reply.cutDue, !reply.cutSent, SurviveSpokenCut.due(receivedMs: reply.milliseconds) {
            cutReply(slot, on: connection)
        }
    }

    // MARK: Tool outputs

    func perform(_ steps: [SurviveToolTurn.Step], _ slot: Int, _ now: UInt64, on connection: ClientConnection) {
        for step in steps {
            switch step {
            case .sendOutput(let callID, let outputID, let again):
                if again { counts.toolOutputsResent += 1 } else { counts.toolOutputsSent += 1 }
                send(#"{"type":"conversation.item.create","event_id":"out_\#(outputID)","item":{"id":"\#(outputID)","type":"function_call_output","call_id":"\#(callID)","output":"\#(SurviveToolTurn.output)"}}"#, on: connection)
            case .createResponse:
                // The reply to the outputs is the turn's until it ends: timed, and nudged, afresh.
                sessions[slot].turnResponseSeen = false
                sessions[slot].turnNudged = false
                sessions[slot].turnDeadline = now + deadline(.weather)
                sendResponseCreate(slot, on: connection)
            }
        }
    }

    // MARK: Cuts

    /// The user pressed stop: cancel the reply, then truncate it at the audio received. Both name
    /// the response and item, so that sent again after a resume they touch nothing else.
    func cutReply(_ slot: Int, on connection: ClientConnection) {
        guard let reply = sessions[slot].reply, reply.cutDue, !reply.cutSent, let itemID = reply.itemID else { return }
        sessions[slot].reply?.cutSent = true
        sessions[slot].cuts.append(SurviveSpokenCut(itemID: itemID, responseID: reply.responseID, receivedSamples: reply.samples, streamed: reply.transcript))
        counts.cutsSent += 1
        let i = sessions[slot].cuts.count - 1
        sendCancel(slot, i, on: connection)
        sendTruncate(slot, i, on: connection)
    }

    func sendCancel(_ slot: Int, _ i: Int, on connection: ClientConnection) {
        let responseID = sessions[slot].cuts[i].responseID.map { #","response_id":"\#($0)""# } ?? ""
        send(#"{"type":"response.cancel","event_id":"cancel_\#(slot)_\#(i)"\#(responseID)}"#, on: connection)
    }

    func sendTruncate(_ slot: Int, _ i: Int, on connection: ClientConnection) {
        let cut = sessions[slot].cuts[i]
        send(#"{"type":"conversation.item.truncate","event_id":"trunc_\#(slot)_\#(i)","item_id":"\#(cut.itemID)","content_index":0,"audio_end_ms":\#(cut.audioEndMs)}"#, on: connection)
    }

    /// The item as the server holds it right after the cut, which it must keep from then on.
    func sendCutRetrieve(_ slot: Int, _ i: Int, on connection: ClientConnection) {
        sessions[slot].cuts[i].retrieveSent = true
        send(#"{"type":"conversation.item.retrieve","event_id":"cut_\#(slot)_\#(i)","item_id":"\#(sessions[slot].cuts[i].itemID)"}"#, on: connection)
    }

    /// After a resume: a truncate whose echo the replay did not bring never reached the server
    /// (nor did the cancel before it, if its response has not ended); the retrieve after an echo
    /// is sent, or sent again, until answered.
    func resendCuts(_ slot: Int, on connection: ClientConnection) {
        for i in sessions[slot].cuts.indices where !sessions[slot].cuts[i].voided {
            if !sessions[slot].cuts[i].truncateEchoed {
                if sessions[slot].cuts[i].status == nil { sendCancel(slot, i, on: connection) }
                counts.cutsResent += 1
                sessions[slot].cuts[i].resent = true
                sendTruncate(slot, i, on: connection)
            } else if sessions[slot].cuts[i].afterCut == nil {
                sendCutRetrieve(slot, i, on: connection)
            }
        }
    }
}
