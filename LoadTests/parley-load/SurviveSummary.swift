import JSON
import Loop

/// The survive run's verdict and report: the problems that fail it, the JSON, the table.
extension SurviveRun {
    // MARK: Summary

    func summary(cpu: CPUTime, seconds: Double) -> Summary {
        let dead = sessions.filter { $0.state == .dead }.count
        let dropsTotal = counts.drops.values.reduce(0, +)
        var problems: [String] = []
        if counts.created < count { problems.append("only \(counts.created) of \(count) sessions opened") }
        if counts.itemsLost > 0 { problems.append("\(counts.itemsLost) completed items lost (item_not_found)") }
        if counts.itemsUnreachable > 0 { problems.append("\(counts.itemsUnreachable) completed items on sessions that could not be reached") }
        if !counts.resumeFailures.isEmpty { problems.append("resume failures: \(Format.reasons(counts.resumeFailures))") }
        if counts.turnsUnanswered > 0 { problems.append("\(counts.turnsUnanswered) turns unanswered") }
        if counts.seqGaps > 0 { problems.append("\(counts.seqGaps) gaps in seq") }
        func ms(_ v: UInt64) -> Double { Double(v) / 1e6 }
        let json = JSON.object([
            ("kind", .string("survive")),
            ("target", .string(target.url)),
            ("sessions", .int(count)),
            ("created", .int(counts.created)),
            ("connect_seconds", .number(counts.connectSeconds)),
            ("open_at_end", .int(counts.openAtEnd)),
            ("dead", .int(dead)),
            ("ended", .counts(counts.ended)),
            ("turn_interval_seconds", .number(Double(interval) / 1e9)),
            ("duration_seconds", .number(duration)),
            ("turns_sent", .int(counts.turnsSent)),
            ("turns_completed", .int(counts.turnsCompleted)),
            ("turns_resent_after_resume", .int(counts.turnsResent)),
            ("turns_nudged", .int(counts.responsesNudged)),
            ("turns_unanswered", .int(counts.turnsUnanswered)),
            ("turns_skipped", .int(counts.turnsSkipped)),
            ("response_statuses", .counts(counts.statuses)),
            ("turn_seconds", .object([("p50", .number(ms(counts.turnLatency.percentile(50)) / 1e3)), ("p99", .number(ms(counts.turnLatency.percentile(99)) / 1e3)), ("max", .number(ms(counts.turnLatency.maximum) / 1e3))])),
            ("item_done_events", .int(counts.itemDoneEvents)),
            ("response_done_events", .int(counts.responseDoneEvents)),
            ("items_checked", .int(counts.itemsChecked)),
            ("items_retrieved", .int(counts.itemsRetrieved)),
            ("items_lost", .int(counts.itemsLost)),
            ("items_unreachable", .int(counts.itemsUnreachable)),
            ("lost_examples", .array(counts.lostExamples.map { .string($0) })),
            ("drops", .counts(counts.drops)),
            ("drops_total", .int(dropsTotal)),
            ("reconnect_failures", .counts(counts.reconnectFailures)),
            ("resumes", .int(counts.resumes)),
            ("replayed_events", .int(counts.replayedEvents)),
            ("resume_failures", .counts(counts.resumeFailures)),
            ("drop_to_resumed", turnLatencyJSON(counts.resumeLatency)),
            ("seq_gaps", .int(counts.seqGaps)),
            ("seq_gaps_at_resume", .int(counts.seqGapsAtResume)),
            ("seq_duplicates", .int(counts.seqDuplicates)),
            ("errors", .counts(counts.errors)),
            ("client_cpu_seconds", .number(cpu.user + cpu.system)),
            ("client_cpu_user", .number(cpu.user)),
            ("client_cpu_system", .number(cpu.system)),
            ("wall_seconds", .number(seconds)),
            ("problems", .array(problems.map { .string($0) })),
            ("passed", .bool(problems.isEmpty)),
        ])
        func latency(_ r: LatencyRecorder) -> String {
            r.count == 0 ? "n/a" : "p50 \(LatencyRecorder.format(nanoseconds: r.percentile(50)))  p99 \(LatencyRecorder.format(nanoseconds: r.percentile(99)))  max \(LatencyRecorder.format(nanoseconds: r.maximum))  (n \(Format.grouped(Int(r.count))))"
        }
        var lines = ["", "survive: \(Format.grouped(count)) sessions, \(Format.fixed(duration, 0)) s of turns, \(Format.fixed(seconds, 1)) s in all"]
        lines.append(Format.row("sessions", "\(Format.grouped(counts.created)) opened, \(Format.grouped(counts.openAtEnd)) open at the end, \(Format.grouped(dead)) gone (\(Format.reasons(counts.ended)))", width: 24))
        lines.append(Format.row("turns", "\(Format.grouped(counts.turnsSent)) sent, \(Format.grouped(counts.turnsCompleted)) completed, \(counts.turnsResent) re-sent after resume, \(counts.responsesNudged) nudged, \(counts.turnsUnanswered) unanswered, \(counts.turnsSkipped) skipped", width: 24))
        lines.append(Format.row("turn time", latency(counts.turnLatency), width: 24))
        lines.append(Format.row("completed items", "\(Format.grouped(counts.itemsChecked)) seen done (\(Format.grouped(counts.itemDoneEvents)) item.done, \(Format.grouped(counts.responseDoneEvents)) response.done events)", width: 24))
        lines.append(Format.row("completed items lost", "\(counts.itemsLost) (item_not_found); \(counts.itemsUnreachable) on unreachable sessions; \(Format.grouped(counts.itemsRetrieved)) retrieved", width: 24))
        lines.append(Format.row("drops", "\(Format.grouped(dropsTotal)) (\(Format.reasons(counts.drops)))", width: 24))
        lines.append(Format.row("failed attempts", Format.reasons(counts.reconnectFailures), width: 24))
        lines.append(Format.row("resumes", "\(Format.grouped(counts.resumes)) session.resumed, \(Format.grouped(counts.replayedEvents)) events replayed; failures: \(counts.resumeFailures.isEmpty ? "none" : Format.reasons(counts.resumeFailures))", width: 24))
        lines.append(Format.row("drop → session.resumed", latency(counts.resumeLatency), width: 24))
        lines.append(Format.row("seq", "\(counts.seqGaps) gaps, \(counts.seqDuplicates) duplicates; \(counts.seqGapsAtResume) gaps at a resume from the store (only completions are kept there)", width: 24))
        lines.append(Format.row("errors", counts.errors.isEmpty ? "none" : Format.reasons(counts.errors), width: 24))
        lines.append(Format.row("client CPU", "\(Format.fixed(cpu.user + cpu.system, 1)) s (\(Format.fixed((cpu.user + cpu.system) / seconds * 100, 0)) % of a core)", width: 24))
        lines.append(problems.isEmpty ? "PASS" : "FAIL: " + problems.joined(separator: "; "))
        return Summary(json: json, table: lines.joined(separator: "\n"), passed: problems.isEmpty)
    }

    func turnLatencyJSON(_ r: LatencyRecorder) -> JSON {
        .object([("count", .int(Int(r.count))), ("p50_ms", .number(Double(r.percentile(50)) / 1e6)),
                 ("p99_ms", .number(Double(r.percentile(99)) / 1e6)), ("max_ms", .number(Double(r.maximum) / 1e6))])
    }
}
