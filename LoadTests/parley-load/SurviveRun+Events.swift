import JSON
import Loop

/// The server's events, and the connections lost: what each does to a session's state.
extension SurviveRun {
    // MARK: Server events

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
        switch type {
        case "session.created":
            guard sessions[slot].state == .opening, sessions[slot].token == nil else { return }
            counts.created += 1
            sessions[slot].state = .ready
            sessions[slot].attemptStartedAt = 0
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
            sessions[slot].resumedJustNow = true
            if sessions[slot].replayLeft == 0 { replayFinished(slot, now) }
        case "conversation.item.added", "conversation.item.created":
            if event["item"]?["id"]?.string == sessions[slot].turnItemID { sessions[slot].turnUserSeen = true }
        case "conversation.item.done":
            counts.itemDoneEvents += 1
            if let id = event["item"]?["id"]?.string {
                if id == sessions[slot].turnItemID { sessions[slot].turnUserSeen = true }
                noteDone(slot, id)
            }
        case "response.created":
            if sessions[slot].turnSentAt != 0 { sessions[slot].turnResponseSeen = true }
        case "response.done":
            counts.responseDoneEvents += 1
            let response = event["response"]
            for item in response?["output"]?.array ?? [] { if let id = item["id"]?.string { noteDone(slot, id) } }
            guard sessions[slot].turnSentAt != 0 else { return }
            let status = response?["status"]?.string ?? "(no status)"
            counts.statuses[status, default: 0] += 1
            if status == "completed" {
                counts.turnsCompleted += 1
                counts.turnLatency.record(now - sessions[slot].turnSentAt)
            }
            sessions[slot].turnSentAt = 0
            startTurnIfFree(slot, now)
        case "conversation.item.retrieved":
            guard sessions[slot].checksLeft > 0 else { return }
            sessions[slot].checksLeft -= 1
            counts.itemsRetrieved += 1
        case "error":
            let code = event["error"]?["code"]?.string ?? "(no code)"
            let eventID = event["error"]?["event_id"]?.string ?? event["event_id"]?.string ?? ""
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
            counts.errors[code, default: 0] += 1
        default:
            break
        }
    }

    func noteDone(_ slot: Int, _ id: String) {
        guard !sessions[slot].doneSet.contains(id) else { return }
        sessions[slot].doneSet.insert(id)
        sessions[slot].done.append(id)
    }

    func lost(_ connection: ClientConnection, reason: String, in pool: ConnectionPool) {
        let slot = connection.slot
        let now = MonotonicClock.nanoseconds()
        let was = sessions[slot].state
        sessions[slot].connection = nil
        guard was != .dead else { return }
        if checking {
            sessions[slot].state = .dead
            return
        }
        if was == .ready || was == .opening {
            counts.drops[reason, default: 0] += 1
            if sessions[slot].droppedAt == 0 { sessions[slot].droppedAt = now }
        } else if sessions[slot].token != nil {
            counts.reconnectFailures[reason, default: 0] += 1
        }
        // Closes that end the session on the server: nothing to resume.
        for code in ["1000", "1002", "1003", "1007", "1008", "1009"] where reason == "server closed with \(code)" {
            counts.ended[reason, default: 0] += 1
            sessions[slot].state = .dead
            return
        }
        guard sessions[slot].token != nil else {
            if sessions[slot].state == .connecting && sessions[slot].attempts == 0 && counts.created < count {
                counts.ended["never opened: \(reason)", default: 0] += 1
            } else {
                counts.ended["dropped before its resume token: \(reason)", default: 0] += 1
            }
            sessions[slot].state = .dead
            return
        }
        sessions[slot].replayLeft = 0
        scheduleRetry(slot, now)
    }
}
