import JSON
import Loop

/// The survive run's verdict and report: the problems that fail it, the JSON, the table.
extension SurviveRun {
    func summary(cpu: CPUTime, seconds: Double) -> Summary {
        let problems = self.problems()
        let json = JSON.object(jsonFields(cpu: cpu, seconds: seconds) + [
            ("problems", .array(problems.map { .string($0) })),
            ("passed", .bool(problems.isEmpty)),
        ])
        var lines = table(cpu: cpu, seconds: seconds)
        lines.append(problems.isEmpty ? "PASS" : "FAIL: " + problems.joined(separator: "; "))
        return Summary(json: json, table: lines.joined(separator: "\n"), passed: problems.isEmpty)
    }

    /// The sessions outside the limited tenant: all of them must open.
    private var untenanted: Range<Int> { 0..<(count - (settings.tenantKey == nil ? 0 : settings.tenantSessions)) }
    private var tenantSlots: Range<Int> { untenanted.upperBound..<count }

    /// Cuts on sessions still reachable whose truncate never came back.
    private var cutsUnechoed: Int {
        sessions.filter { $0.state == .ready }.reduce(0) { $0 + $1.cuts.filter { !$0.voided && !$0.truncateEchoed }.count }
    }

    private func problems() -> [String] {
        var problems: [String] = []
        let opened = untenanted.filter { sessions[$0].everOpened }.count
        if opened < untenanted.count { problems.append("only \(opened) of \(untenanted.count) sessions opened") }
        if counts.itemsLost > 0 { problems.append("\(counts.itemsLost) completed items lost (item_not_found)") }
        if counts.itemsUnreachable > 0 { problems.append("\(counts.itemsUnreachable) completed items on sessions that could not be reached") }
        if !counts.resumeFailures.isEmpty { problems.append("resume failures: \(Format.reasons(counts.resumeFailures))") }
        if counts.turnsUnanswered > 0 {
            problems.append("\(counts.turnsUnanswered) turns unanswered (" + counts.unansweredExamples.joined(separator: " | ") + ")")
        }
        if counts.seqGaps > 0 { problems.append("\(counts.seqGaps) gaps in seq") }
        if !counts.responseStatusViolations.isEmpty { problems.append("response.done: \(Format.reasons(counts.responseStatusViolations))") }
        if !counts.closesUndocumented.isEmpty { problems.append("closes no document gives: \(Format.reasons(counts.closesUndocumented))") }
        if !counts.closesClientFault.isEmpty { problems.append("closed for a protocol fault of this client: \(Format.reasons(counts.closesClientFault))") }
        if settings.tools && counts.toolTurnsSent > 0 && counts.toolCalls == 0 {
            problems.append("no weather turn got a tool call (\(counts.toolTurnsSent) asked): the check saw nothing")
        }
        if settings.spoken > 0 && counts.spokenTurnsSent > 0 && counts.spokenTurnsCompleted == 0 { problems.append("no spoken turn completed") }
        if !counts.truncationViolations.isEmpty { problems.append("truncation: \(Format.reasons(counts.truncationViolations))") }
        if cutsUnechoed > 0 { problems.append("\(cutsUnechoed) cuts whose conversation.item.truncated never came") }
        if settings.tenantKey != nil, SurviveTenantTimeline.exceedsBound(maximum: counts.tenantTimeline.maximum, limit: settings.tenantLimit) {
            problems.append("the tenant held \(counts.tenantTimeline.maximum) sessions at once, over 3 × its limit of \(settings.tenantLimit)")
        }
        return problems
    }

    private func jsonFields(cpu: CPUTime, seconds: Double) -> [(String, JSON)] {
        let dead = sessions.filter { $0.state == .dead }.count
        func ms(_ v: UInt64) -> Double { Double(v) / 1e6 }
        func inSeconds(_ r: LatencyRecorder) -> JSON {
            .object([("p50", .number(ms(r.percentile(50)) / 1e3)), ("p99", .number(ms(r.percentile(99)) / 1e3)), ("max", .number(ms(r.maximum) / 1e3))])
        }
        var fields: [(String, JSON)] = [
            ("kind", .string("survive")),
            ("target", .string(target.url)),
            ("sessions", .int(count)),
            ("created", .int(counts.created)),
            ("connect_seconds", .number(counts.connectSeconds)),
            ("open_at_end", .int(counts.openAtEnd)),
            ("dead", .int(dead)),
            ("ended", .counts(counts.ended)),
            ("turn_interval_seconds", .number(Double(interval) / 1e9)),
            ("duration_seconds", .number(settings.duration)),
            ("turns_sent", .int(counts.turnsSent)),
            ("turns_completed", .int(counts.turnsCompleted)),
            ("turns_resent_after_resume", .int(counts.turnsResent)),
            ("turns_nudged", .int(counts.responsesNudged)),
            ("turns_unanswered", .int(counts.turnsUnanswered)),
            ("unanswered_examples", .array(counts.unansweredExamples.map { .string($0) })),
            ("turns_skipped", .int(counts.turnsSkipped)),
            ("response_statuses", .counts(counts.statuses)),
            ("turn_seconds", inSeconds(counts.turnLatency)),
            ("item_done_events", .int(counts.itemDoneEvents)),
            ("response_done_events", .int(counts.responseDoneEvents)),
            ("items_checked", .int(counts.itemsChecked)),
            ("items_retrieved", .int(counts.itemsRetrieved)),
            ("items_lost", .int(counts.itemsLost)),
            ("items_unreachable", .int(counts.itemsUnreachable)),
            ("items_on_ended_sessions", .int(counts.itemsOnEndedSessions)),
            ("lost_examples", .array(counts.lostExamples.map { .string($0) })),
            ("drops", .counts(counts.drops)),
            ("drops_total", .int(counts.drops.values.reduce(0, +))),
            ("reconnect_failures", .counts(counts.reconnectFailures)),
            ("resumes", .int(counts.resumes)),
            ("replayed_events", .int(counts.replayedEvents)),
            ("resume_failures", .counts(counts.resumeFailures)),
            ("drop_to_resumed", latencyJSON(counts.resumeLatency)),
            ("seq_gaps", .int(counts.seqGaps)),
            ("seq_gaps_at_resume", .int(counts.seqGapsAtResume)),
            ("seq_duplicates", .int(counts.seqDuplicates)),
            ("errors", .counts(counts.errors)),
            // Every response.done, and every close frame the server sent.
            ("response_done_statuses", .counts(counts.responseDoneStatuses)),
            ("response_status_violations", .counts(counts.responseStatusViolations)),
            ("closes", .counts(counts.closes)),
            ("closes_undocumented", .counts(counts.closesUndocumented)),
            ("closes_client_fault", .counts(counts.closesClientFault)),
            // Tool turns.
            ("tools", .bool(settings.tools)),
            ("tool_turns_sent", .int(counts.toolTurnsSent)),
            ("tool_turns_completed", .int(counts.toolTurnsCompleted)),
            ("tool_turns_without_call", .int(counts.toolTurnsWithoutCall)),
            ("tool_turns_gave_up", .int(counts.toolTurnsGaveUp)),
            ("tool_calls", .int(counts.toolCalls)),
            ("tool_calls_answered", .int(counts.toolCallsAnswered)),
            ("tool_outputs_sent", .int(counts.toolOutputsSent)),
            ("tool_outputs_resent_after_resume", .int(counts.toolOutputsResent)),
            // Spoken turns, their replies and the cuts.
            ("spoken_sessions", .int(settings.spoken)),
            ("spoken_turns_sent", .int(counts.spokenTurnsSent)),
            ("spoken_turns_completed", .int(counts.spokenTurnsCompleted)),
            ("spoken_turns_resent_after_resume", .int(counts.spokenTurnsResent)),
            ("spoken_turn_seconds", inSeconds(counts.spokenTurnLatency)),
            ("transcriptions", .int(counts.transcriptions)),
            ("transcriptions_failed", .int(counts.transcriptionsFailed)),
            ("spoken_replies", .int(counts.spokenReplies)),
            ("spoken_replies_silent", .int(counts.spokenRepliesSilent)),
            ("reply_audio_seconds", .number(Double(counts.replyAudioSamples) / 24_000)),
            ("reply_audio_per_reply", latencyJSON(counts.replyAudio)),
            ("cut_every", .int(settings.cutEvery)),
            ("cuts_sent", .int(counts.cutsSent)),
            ("cuts_cancelled", .int(counts.cutsCancelled)),
            ("cuts_completed_first", .int(counts.cutsCompletedFirst)),
            ("cuts_failed_upstream", .int(counts.cutsFailedUpstream)),
            ("cuts_truncated", .int(counts.cutsTruncated)),
            ("cuts_unechoed", .int(cutsUnechoed)),
            ("cuts_resent_after_resume", .int(counts.cutsResent)),
            ("cuts_voided", .int(counts.cutsVoided)),
            ("cuts_not_made", .int(counts.cutsNotMade)),
            ("cuts_checked_at_end", .int(counts.cutsCheckedAtEnd)),
            ("cancels_too_late", .int(counts.cancelsTooLate)),
            ("server_truncations", .int(counts.serverTruncations)),
            ("truncation_violations", .counts(counts.truncationViolations)),
            ("truncation_violations_total", .int(counts.truncationViolations.values.reduce(0, +))),
            ("truncation_examples", .array(counts.truncationExamples.map { .string($0) })),
        ]
        if settings.tenantKey != nil {
            fields += [
                ("tenant_sessions", .int(settings.tenantSessions)),
                ("tenant_limit", .int(settings.tenantLimit)),
                ("tenant_opened", .int(tenantSlots.filter { sessions[$0].everOpened }.count)),
                ("tenant_open_max", .int(counts.tenantTimeline.maximum)),
                ("tenant_open", .array(counts.tenantTimeline.samples.map { .array([.int($0.unixSeconds), .int($0.open)]) })),
                ("tenant_refusals_429", .int(counts.tenantRefusals)),
                ("tenant_resume_refusals_429", .int(counts.tenantResumeRefusals)),
            ]
        }
        fields += [
            ("client_cpu_seconds", .number(cpu.user + cpu.system)),
            ("client_cpu_user", .number(cpu.user)),
            ("client_cpu_system", .number(cpu.system)),
            ("wall_seconds", .number(seconds)),
        ]
        return fields
    }

    private func table(cpu: CPUTime, seconds: Double) -> [String] {
        let dead = sessions.filter { $0.state == .dead }.count
        let dropsTotal = counts.drops.values.reduce(0, +)
        func latency(_ r: LatencyRecorder) -> String {
            r.count == 0 ? "n/a" : "p50 \(LatencyRecorder.format(nanoseconds: r.percentile(50)))  p99 \(LatencyRecorder.format(nanoseconds: r.percentile(99)))  max \(LatencyRecorder.format(nanoseconds: r.maximum))  (n \(Format.grouped(Int(r.count))))"
        }
        func row(_ label: String, _ value: String) -> String { Format.row(label, value, width: 24) }
        var lines = ["", "survive: \(Format.grouped(count)) sessions, \(Format.fixed(settings.duration, 0)) s of turns, \(Format.fixed(seconds, 1)) s in all"]
        lines.append(row("sessions", "\(Format.grouped(counts.created)) opened, \(Format.grouped(counts.openAtEnd)) open at the end, \(Format.grouped(dead)) gone (\(Format.reasons(counts.ended)))"))
        lines.append(row("turns", "\(Format.grouped(counts.turnsSent)) sent, \(Format.grouped(counts.turnsCompleted)) completed, \(counts.turnsResent) re-sent after resume, \(counts.responsesNudged) nudged, \(counts.turnsUnanswered) unanswered, \(counts.turnsSkipped) skipped"))
        lines.append(row("turn time", latency(counts.turnLatency)))
        if settings.tools {
            lines.append(row("tool turns", "\(counts.toolTurnsSent) asked for the weather, \(counts.toolTurnsCompleted) answered after their calls, \(counts.toolTurnsWithoutCall) without a call, \(counts.toolTurnsGaveUp) gave up"))
            lines.append(row("tool calls", "\(counts.toolCalls) made, \(counts.toolCallsAnswered) answered (output acknowledged), \(counts.toolOutputsSent) outputs sent, \(counts.toolOutputsResent) sent again after a resume"))
        }
        if settings.spoken > 0 {
            lines.append(row("spoken turns", "\(counts.spokenTurnsSent) sent by \(settings.spoken) sessions, \(counts.spokenTurnsCompleted) completed, \(counts.spokenTurnsResent) re-sent after resume; \(counts.transcriptions) transcribed, \(counts.transcriptionsFailed) failed"))
            lines.append(row("spoken turn time", latency(counts.spokenTurnLatency)))
            lines.append(row("spoken replies", "\(counts.spokenReplies), \(Format.fixed(Double(counts.replyAudioSamples) / 24_000, 1)) s of audio (each: \(latency(counts.replyAudio))); \(counts.spokenRepliesSilent) silent"))
        }
        if settings.cutEvery > 0 {
            lines.append(row("cuts", "\(counts.cutsSent) sent: \(counts.cutsCancelled) cancelled, \(counts.cutsCompletedFirst) completed first, \(counts.cutsFailedUpstream) failed upstream; \(counts.cutsTruncated) truncations echoed, \(cutsUnechoed) not; \(counts.cutsResent) re-sent after resume, \(counts.cutsVoided) voided, \(counts.cutsNotMade) replies ended before their cut"))
            lines.append(row("truncation", "\(counts.cutsCheckedAtEnd) cut items checked at the end, \(counts.serverTruncations) server truncations; violations: \(Format.reasons(counts.truncationViolations))"))
            for example in counts.truncationExamples.prefix(3) { lines.append(row("", example)) }
        }
        lines.append(row("response.done", "\(Format.reasons(counts.responseDoneStatuses)); violations: \(Format.reasons(counts.responseStatusViolations))"))
        lines.append(row("completed items", "\(Format.grouped(counts.itemsChecked)) seen done (\(Format.grouped(counts.itemDoneEvents)) item.done, \(Format.grouped(counts.responseDoneEvents)) response.done events)"))
        lines.append(row("completed items lost", "\(counts.itemsLost) (item_not_found); \(counts.itemsUnreachable) on unreachable sessions; \(counts.itemsOnEndedSessions) on sessions that were never resumable and ended; \(Format.grouped(counts.itemsRetrieved)) retrieved"))
        lines.append(row("drops", "\(Format.grouped(dropsTotal)) (\(Format.reasons(counts.drops)))"))
        lines.append(row("closes", "\(Format.reasons(counts.closes)); undocumented: \(Format.reasons(counts.closesUndocumented)); client faults: \(Format.reasons(counts.closesClientFault))"))
        lines.append(row("failed attempts", Format.reasons(counts.reconnectFailures)))
        lines.append(row("resumes", "\(Format.grouped(counts.resumes)) session.resumed, \(Format.grouped(counts.replayedEvents)) events replayed; failures: \(counts.resumeFailures.isEmpty ? "none" : Format.reasons(counts.resumeFailures))"))
        lines.append(row("drop → session.resumed", latency(counts.resumeLatency)))
        lines.append(row("seq", "\(counts.seqGaps) gaps, \(counts.seqDuplicates) duplicates; \(counts.seqGapsAtResume) gaps at a resume from the store (only completions are kept there)"))
        if settings.tenantKey != nil {
            let opened = tenantSlots.filter { sessions[$0].everOpened }.count
            lines.append(row("tenant", "\(settings.tenantSessions) sessions, limit \(settings.tenantLimit): at most \(counts.tenantTimeline.maximum) open at once, \(opened) ever opened; \(counts.tenantRefusals) refused with 429 at open, \(counts.tenantResumeRefusals) on a resume"))
        }
        lines.append(row("errors", counts.errors.isEmpty ? "none" : Format.reasons(counts.errors)))
        lines.append(row("client CPU", "\(Format.fixed(cpu.user + cpu.system, 1)) s (\(Format.fixed((cpu.user + cpu.system) / seconds * 100, 0)) % of a core)"))
        return lines
    }

    func latencyJSON(_ r: LatencyRecorder) -> JSON {
        .object([("count", .int(Int(r.count))), ("p50_ms", .number(Double(r.percentile(50)) / 1e6)),
                 ("p99_ms", .number(Double(r.percentile(99)) / 1e6)), ("max_ms", .number(Double(r.maximum) / 1e6))])
    }
}
