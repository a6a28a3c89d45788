import JSON
import Loop

/// The server's events, and the connections lost: what each does to a session's state.
extension SurviveRun {
    func opened(_ connection: ClientConnection, in pool: ConnectionPool) {
        let slot = connection.slot
        sessions[slot].connection = connection
        sessions[slot].state = .opening
    }

    func received(_ opcode: UInt8, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection, in pool: ConnectionPool) {
        guard opcode == ClientFrame.text, let event = try? JSON(parsing: String(decoding: payload, as: UTF8.self)),
              let type = event["type"]?.string else { return }
        let slot = connection.slot
        let now = MonotonicClock.nanoseconds()
        if let seq = event["seq"]?.int {
            if seq <= sessions[slot].lastSeq {
                counts.seqDuplicates += 1
                return
            }
            if seq != sessions[slot].lastSeq + 1 {
                // Within a replay too: it holds the completions alone when it comes from the store.
                if sessions[slot].resumedJustNow || sessions[slot].replayLeft > 0 { counts.seqGapsAtResume += 1 } else { counts.seqGaps += 1 }
            }
            sessions[slot].resumedJustNow = false
            sessions[slot].lastSeq = seq
            if sessions[slot].replayLeft > 0 {
                counts.replayedEvents += 1
                sessions[slot].replayLeft -= 1
                defer { if sessions[slot].replayLeft == 0 { replayFinished(slot, now) } }
                handle(type, event, slot, now)
                return
            }
        }
        handle(type, event, slot, now)
    }

    func handle(_ type: String, _ event: JSON, _ slot: Int, _ now: UInt64) {
        if sessions[slot].turnSentAt != 0 { noteForStory(type, event, slot, now) }
        switch type {
        case "session.created":
            guard sessions[slot].state == .opening, sessions[slot].token == nil else { return }
            counts.created += 1
            sessions[slot].state = .ready
            sessions[slot].attemptStartedAt = 0
            sessions[slot].everOpened = true
            if let connection = sessions[slot].connection { configure(slot, on: connection) }
            // A tenant session let in late may have a turn waiting.
            startTurnIfFree(slot, now)
        case "session.updated":
            guard sessions[slot].updateSent, !sessions[slot].configured else { return }
            sessions[slot].configured = true
            startTurnIfFree(slot, now)
        case "session.resume_token":
            if let token = event["token"]?.string { sessions[slot].token = token }
        case "session.resumed":
            if let token = event["token"]?.string { sessions[slot].token = token }
            counts.resumes += 1
            if sessions[slot].droppedAt != 0 { counts.resumeLatency.record(now - sessions[slot].droppedAt) }
            sessions[slot].droppedAt = 0
            sessions[slot].attempts = 0
            sessions[slot].attemptStartedAt = 0
            sessions[slot].state = .ready
            sessions[slot].replayLeft = event["replayed"]?.int ?? 0
            sessions[slot].inReplay = sessions[slot].replayLeft > 0
            sessions[slot].resumedJustNow = true
            if sessions[slot].replayLeft == 0 { replayFinished(slot, now) }
        case "input_audio_buffer.committed":
            if sessions[slot].turnSentAt != 0, sessions[slot].turnKind == .spoken, sessions[slot].turnItemID.isEmpty,
               let id = event["item_id"]?.string {
                sessions[slot].turnItemID = id
                sessions[slot].turnUserSeen = true
            }
        case "conversation.item.added", "conversation.item.created":
            guard let id = event["item"]?["id"]?.string else { return }
            if id == sessions[slot].turnItemID { sessions[slot].turnUserSeen = true }
            toolOutputSeen(slot, id)
        case "conversation.item.done":
            counts.itemDoneEvents += 1
            guard let item = event["item"], let id = item["id"]?.string else { return }
            // From the store after a crash, the committed event is not replayed: the user's audio
            // item's done names the turn's item instead.
            if sessions[slot].turnSentAt != 0, sessions[slot].turnKind == .spoken, sessions[slot].turnItemID.isEmpty,
               item["role"]?.string == "user", item["content"]?.array?.first?["type"]?.string == "input_audio" {
                sessions[slot].turnItemID = id
            }
            if id == sessions[slot].turnItemID { sessions[slot].turnUserSeen = true }
            toolOutputSeen(slot, id)
            noteDone(slot, id)
        case "conversation.item.input_audio_transcription.completed":
            counts.transcriptions += 1
            if let id = event["item_id"]?.string { noteDone(slot, id) }
        case "conversation.item.input_audio_transcription.failed":
            counts.transcriptionsFailed += 1
        case "response.created":
            guard sessions[slot].turnSentAt != 0 else { return }
            sessions[slot].turnResponseSeen = true
            sessions[slot].tool?.responseCreated()
            if let reply = sessions[slot].reply, let id = event["response"]?["id"]?.string, reply.responseID != id {
                // A turn answered anew (its node ended mid-reply) starts its reply afresh; it is
                // cut at most once.
                sessions[slot].reply = SurviveSession.SpokenReply(responseID: id, cutDue: reply.cutDue, cutSent: reply.cutSent)
            }
        case "response.output_item.added":
            if sessions[slot].reply?.itemID == nil, sessions[slot].turnSentAt != 0, event["item"]?["type"]?.string == "message",
               event["response_id"]?.string == sessions[slot].reply?.responseID {
                sessions[slot].reply?.itemID = event["item"]?["id"]?.string
            }
        case "response.output_audio.delta":
            audioArrived(slot, event)
        case "response.output_audio_transcript.delta":
            guard let id = event["item_id"]?.string, let delta = event["delta"]?.string else { return }
            if sessions[slot].reply?.itemID == id { sessions[slot].reply?.heard(delta) }
            for i in sessions[slot].cuts.indices where sessions[slot].cuts[i].itemID == id { sessions[slot].cuts[i].heard(delta) }
        case "response.output_audio_transcript.done":
            guard let id = event["item_id"]?.string, let transcript = event["transcript"]?.string else { return }
            if sessions[slot].reply?.itemID == id, transcript.count > sessions[slot].reply?.transcript.count ?? 0 {
                sessions[slot].reply?.transcript = String(transcript.prefix(SurviveSpokenCut.maxTranscriptCharacters))
            }
            for i in sessions[slot].cuts.indices where sessions[slot].cuts[i].itemID == id { sessions[slot].cuts[i].streamedWhole(transcript) }
        case "conversation.item.truncated":
            truncated(slot, event)
        case "response.done":
            responseDone(slot, event, now)
        case "conversation.item.retrieved":
            retrieved(slot, event)
        case "error":
            error(slot, event)
        default:
            break
        }
    }

    /// The events a turn's story keeps: its items', its responses', resumes and errors.
    private func noteForStory(_ type: String, _ event: JSON, _ slot: Int, _ now: UInt64) {
        let replayed = sessions[slot].inReplay ? " (replayed)" : ""
        switch type {
        case "conversation.item.added", "conversation.item.created", "conversation.item.done":
            guard let id = event["item"]?["id"]?.string, id == sessions[slot].turnItemID || sessions[slot].turnItemID.isEmpty else { return }
            sessions[slot].turnStory.note("\(type) \(id)\(replayed)", at: now)
        case "input_audio_buffer.committed":
            sessions[slot].turnStory.note("\(type) \(event["item_id"]?.string ?? "?")\(replayed)", at: now)
        case "response.created", "response.done":
            let response = event["response"]
            sessions[slot].turnStory.note("\(type) \(response?["id"]?.string ?? "?") \(response?["status"]?.string ?? "")\(replayed)", at: now)
        case "session.resumed":
            sessions[slot].turnStory.note("session.resumed, \(event["replayed"]?.int ?? 0) replayed", at: now)
        case "error":
            sessions[slot].turnStory.note("error \(event["error"]?["code"]?.string ?? "?")", at: now)
        default:
            break
        }
    }

    func noteDone(_ slot: Int, _ id: String) {
        guard !sessions[slot].doneSet.contains(id) else { return }
        sessions[slot].doneSet.insert(id)
        sessions[slot].done.append(id)
    }

    /// A weather turn's output came back: the server has it, and it is never sent again.
    private func toolOutputSeen(_ slot: Int, _ id: String) {
        if sessions[slot].tool?.acknowledged(id) == true { counts.toolCallsAnswered += 1 }
    }

    private func audioArrived(_ slot: Int, _ event: JSON) {
        guard let id = event["item_id"]?.string, let delta = event["delta"]?.string else { return }
        let samples = SurviveSpeech.samples(inBase64: delta)
        counts.replyAudioSamples += samples
        for i in sessions[slot].cuts.indices where sessions[slot].cuts[i].itemID == id { sessions[slot].cuts[i].receivedSamples += samples }
        guard sessions[slot].turnSentAt != 0, var reply = sessions[slot].reply else { return }
        if reply.itemID == nil, let responseID = event["response_id"]?.string, reply.responseID == nil || reply.responseID == responseID {
            // Its response.created may have been missed (a resume from the store replays none).
            reply.responseID = responseID
            reply.itemID = id
        }
        guard reply.itemID == id else { return }
        reply.samples += samples
        sessions[slot].reply = reply
        if reply.cutDue, !reply.cutSent, !sessions[slot].inReplay, SurviveSpokenCut.due(receivedMs: reply.milliseconds), let connection = sessions[slot].connection {
            cutReply(slot, on: connection)
        }
    }

    /// `conversation.item.truncated`: ours coming back (the same audio_end_ms, never past the audio
    /// that arrived), or the server's own after its cancel: what it reckons the client had time to
    /// play, from the audio it sent (docs/protocol.md), which a delayed or stalled network makes
    /// more than arrived (3 of 29 cuts in a short chaos run); counted, not held against it, since
    /// our own truncate that follows is the one the history keeps.
    private func truncated(_ slot: Int, _ event: JSON) {
        guard let id = event["item_id"]?.string, let end = event["audio_end_ms"]?.int else { return }
        guard let i = sessions[slot].cuts.firstIndex(where: { $0.itemID == id }), end == sessions[slot].cuts[i].audioEndMs else {
            counts.serverTruncations += 1
            return
        }
        let cut = sessions[slot].cuts[i]
        if !cut.truncateEchoed {
            sessions[slot].cuts[i].truncateEchoed = true
            counts.cutsTruncated += 1
            if !cut.retrieveSent, !sessions[slot].inReplay, let connection = sessions[slot].connection { sendCutRetrieve(slot, i, on: connection) }
        }
        if !SurviveSpokenCut.withinReceived(audioEndMs: end, receivedMs: cut.receivedMs) {
            counts.truncationViolation("truncated past the audio received", "session \(slot) item \(id): audio_end_ms \(end), \(cut.receivedMs) ms received")
        }
    }

    private func responseDone(_ slot: Int, _ event: JSON, _ now: UInt64) {
        counts.responseDoneEvents += 1
        let response = event["response"]
        let output = response?["output"]?.array ?? []
        for item in output { if let id = item["id"]?.string { noteDone(slot, id) } }
        let status = response?["status"]?.string ?? "(no status)"
        SurviveCounts.add(status, to: &counts.responseDoneStatuses)
        switch status {
        case "completed", "cancelled", "incomplete": break
        case "failed":
            if response?["status_details"]?["error"]?.object == nil { SurviveCounts.add("failed without status_details.error", to: &counts.responseStatusViolations) }
        default:
            SurviveCounts.add("status \(status)", to: &counts.responseStatusViolations)
        }
        if let id = response?["id"]?.string, let i = sessions[slot].cuts.firstIndex(where: { $0.responseID == id && $0.status == nil }) {
            cutEnded(slot, i, status, response)
        }
        guard sessions[slot].turnSentAt != 0 else { return }
        counts.statuses[status, default: 0] += 1
        var completed = status == "completed"
        switch sessions[slot].turnKind {
        case .text:
            break
        case .weather:
            guard var tool = sessions[slot].tool else { break }
            guard completed else { break }
            let known = tool.calls.count
            let callIDs = output.filter { $0["type"]?.string == "function_call" }.compactMap { $0["call_id"]?.string }
            // In a replay, the outputs wait for its end, where `resumed` sends them.
            let steps = tool.responseDone(callIDs: callIDs, replaying: sessions[slot].inReplay)
            sessions[slot].tool = tool
            counts.toolCalls += tool.calls.count - known
            if !tool.finished {
                if let connection = sessions[slot].connection { perform(steps, slot, now, on: connection) }
                return
            }
            if tool.gaveUp { counts.toolTurnsGaveUp += 1 }
            if tool.calls.isEmpty { counts.toolTurnsWithoutCall += 1 } else { counts.toolTurnsCompleted += 1 }
        case .spoken:
            guard let reply = sessions[slot].reply else { break }
            counts.spokenReplies += 1
            counts.replyAudio.record(UInt64(reply.milliseconds) * 1_000_000)
            if reply.samples == 0 && completed { counts.spokenRepliesSilent += 1 }
            if reply.cutDue && !reply.cutSent && completed { counts.cutsNotMade += 1 }
            // A reply we cut ends cancelled: the turn went as the user wanted.
            if status == "cancelled" && reply.cutSent { completed = true }
            if completed {
                counts.spokenTurnsCompleted += 1
                counts.spokenTurnLatency.record(now - sessions[slot].turnSentAt)
            }
        }
        if completed {
            counts.turnsCompleted += 1
            if sessions[slot].turnKind != .spoken { counts.turnLatency.record(now - sessions[slot].turnSentAt) }
        }
        sessions[slot].turnSentAt = 0
        startTurnIfFree(slot, now)
    }

    /// The response of a reply we cut ended.
    private func cutEnded(_ slot: Int, _ i: Int, _ status: String, _ response: JSON?) {
        sessions[slot].cuts[i].status = status
        let itemID = sessions[slot].cuts[i].itemID
        if let item = response?["output"]?.array?.first(where: { $0["id"]?.string == itemID }),
           let transcript = item["content"]?.array?.first?["transcript"]?.string {
            sessions[slot].cuts[i].streamedWhole(transcript)
        }
        switch status {
        case "cancelled": counts.cutsCancelled += 1
        case "completed": counts.cutsCompletedFirst += 1
        case "failed" where Self.upstreamFault(response?["status_details"]?["error"]?["code"]?.string):
            // The model failed under it (chaos restarts the upstream): not the cut's doing.
            counts.cutsFailedUpstream += 1
        default:
            counts.truncationViolation("cut response ended \(status)", "session \(slot) item \(itemID): \(status)")
        }
    }

    static func upstreamFault(_ code: String?) -> Bool {
        guard let code else { return false }
        return code.hasPrefix("upstream") || code == "rate_limited"
    }

    private func retrieved(_ slot: Int, _ event: JSON) {
        let item = event["item"]
        if let id = item?["id"]?.string, let i = sessions[slot].cuts.firstIndex(where: { $0.itemID == id }) {
            let part = item?["content"]?.array?.first
            let transcript = part?["transcript"]?.string ?? part?["text"]?.string ?? ""
            let cut = sessions[slot].cuts[i]
            if !checking && cut.retrieveSent && cut.afterCut == nil {
                // The retrieve right after the cut: not one of the end's checks.
                sessions[slot].cuts[i].afterCut = transcript
                checkTranscript(slot, cut, transcript, when: "right after the cut")
                return
            }
            if checking && sessions[slot].checksLeft > 0 && !cut.checkedAtEnd {
                sessions[slot].cuts[i].checkedAtEnd = true
                counts.cutsCheckedAtEnd += 1
                checkTranscript(slot, cut, transcript, when: "at the end")
                if !cut.kept(final: transcript) {
                    counts.truncationViolation("truncation not kept", "session \(slot) item \(id): \"\(transcript.prefix(80))\" at the end, \"\(cut.afterCut?.prefix(80) ?? "")\" right after the cut")
                }
            }
        }
        guard sessions[slot].checksLeft > 0 else { return }
        sessions[slot].checksLeft -= 1
        counts.itemsRetrieved += 1
    }

    private func checkTranscript(_ slot: Int, _ cut: SurviveSpokenCut, _ transcript: String, when: String) {
        switch cut.verdict(retrieved: transcript) {
        case .prefix: break
        case .longer:
            counts.truncationViolation("transcript longer than streamed \(when)", "session \(slot) item \(cut.itemID): \"\(transcript.prefix(80))\" against \"\(cut.streamed.prefix(80))\"")
        case .notWordPrefix:
            counts.truncationViolation("transcript not a word prefix \(when)", "session \(slot) item \(cut.itemID): \"\(transcript.prefix(80))\" against \"\(cut.streamed.prefix(80))\"")
        }
    }

    private func error(_ slot: Int, _ event: JSON) {
        let code = event["error"]?["code"]?.string ?? "(no code)"
        let eventID = event["error"]?["event_id"]?.string ?? ""
        if code == "resume_token_invalid" || code == "resume_out_of_range" {
            counts.resumeFailures[code, default: 0] += 1
            sessions[slot].state = .dead
            return
        }
        if sessions[slot].checksLeft > 0 && (code == "item_not_found" || eventID.hasPrefix("chk_")) {
            sessions[slot].checksLeft -= 1
            counts.itemsLost += 1
            if counts.lostExamples.count < 10 { counts.lostExamples.append("session \(slot): \(code) \(event["error"]?["message"]?.string ?? "")") }
            return
        }
        // Our event ids end with the cut's index in the session.
        let cutIndex = eventID.split(separator: "_").last.flatMap { Int($0) }.flatMap { sessions[slot].cuts.indices.contains($0) ? $0 : nil }
        if eventID.hasPrefix("cancel_") && code == "response_cancel_not_active" {
            // The reply had finished (or been cancelled) before the cancel came: the race is ours.
            counts.cancelsTooLate += 1
            return
        }
        if eventID.hasPrefix("trunc_"), let i = cutIndex {
            sessions[slot].cuts[i].voided = true
            if code == "item_not_found" && sessions[slot].cuts[i].resent {
                // Sent again after a resume to a node that never had the reply's end: the turn
                // was answered anew.
                counts.cutsVoided += 1
            } else {
                counts.truncationViolation("truncate refused: \(code)", "session \(slot) item \(sessions[slot].cuts[i].itemID): \(event["error"]?["message"]?.string ?? "")")
            }
            return
        }
        if eventID.hasPrefix("cut_"), let i = cutIndex {
            sessions[slot].cuts[i].voided = true
            counts.truncationViolation("retrieve after the cut refused: \(code)", "session \(slot) item \(sessions[slot].cuts[i].itemID): \(event["error"]?["message"]?.string ?? "")")
            return
        }
        SurviveCounts.add(code, to: &counts.errors)
    }

    func lost(_ connection: ClientConnection, reason: String, in pool: ConnectionPool) {
        let slot = connection.slot
        let now = MonotonicClock.nanoseconds()
        let was = sessions[slot].state
        sessions[slot].connection = nil
        let close = SurviveClose.classify(code: connection.closeCode, reason: connection.closeReason)
        if let code = connection.closeCode {
            SurviveCounts.add("\(code)" + (connection.closeReason.isEmpty ? "" : " \(connection.closeReason)"), to: &counts.closes)
        }
        switch close {
        case .undocumented(let said, _): SurviveCounts.add(said, to: &counts.closesUndocumented)
        case .clientFault(let said): SurviveCounts.add(said, to: &counts.closesClientFault)
        case .drop, .ended: break
        }
        guard was != .dead else { return }
        if checking {
            counts.ended["lost during the final check: \(reason)", default: 0] += 1
            sessions[slot].state = .dead
            return
        }
        // The limited tenant's sessions past its limit are refused before the upgrade; they try
        // again every 5 s, whatever stops a later try (a drain's 503, a node down).
        if inTenant(slot), sessions[slot].token == nil, reason == "HTTP 429" || (sessions[slot].attempts > 0 && !sessions[slot].everOpened) {
            if reason == "HTTP 429" { counts.tenantRefusals += 1 } else { counts.reconnectFailures[reason, default: 0] += 1 }
            return scheduleTenantRetry(slot, now)
        }
        if inTenant(slot), reason == "HTTP 429" { counts.tenantResumeRefusals += 1 }
        if sessions[slot].turnSentAt != 0 { sessions[slot].turnStory.note("connection lost (\(reason))", at: now) }
        if was == .ready || was == .opening {
            counts.drops[reason, default: 0] += 1
            if sessions[slot].droppedAt == 0 { sessions[slot].droppedAt = now }
        } else if sessions[slot].token != nil {
            counts.reconnectFailures[reason, default: 0] += 1
        }
        switch close {
        case .ended(let said), .clientFault(let said), .undocumented(let said, resumes: false):
            // Closes that end the session on the server: nothing to resume.
            counts.ended["server closed with \(said)", default: 0] += 1
            sessions[slot].state = .dead
            return
        case .drop, .undocumented(_, resumes: true):
            break
        }
        guard sessions[slot].token != nil else {
            // The network dropped a session's first open (a reset, the chaos proxy's cut window
            // during the handshake): a client opens it again, as it resumes one it had. Seen in
            // make test when the proxy's first cut fell on the connect phase (2026-11-28).
            if !sessions[slot].everOpened, sessions[slot].attempts < Self.openAttempts, scheduleEnd == .max || now < scheduleEnd {
                counts.reconnectFailures[reason, default: 0] += 1
                return scheduleRetry(slot, now)
            }
            if sessions[slot].state == .connecting && sessions[slot].attempts == 0 && counts.created < count {
                counts.ended["never opened: \(reason)", default: 0] += 1
            } else {
                counts.ended["dropped before its resume token: \(reason)", default: 0] += 1
            }
            sessions[slot].state = .dead
            return
        }
        sessions[slot].replayLeft = 0
        sessions[slot].inReplay = false
        scheduleRetry(slot, now)
    }
}
