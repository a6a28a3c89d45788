import JSON
import Testing
@testable import parley_load

@Suite struct TalkersTests {
    func turn(_ n: Int, a: Double?, b: Double?, transcription: Double? = nil) -> TalkerTurn {
        var turn = TalkerTurn(talker: 0, index: n, voice: .joe, text: "t", lastWordToStoppedMs: a, stoppedToAudioMs: b,
                              lastWordToAudioMs: a.flatMap { a in b.map { a + $0 } })
        if let transcription { turn.timelines = [["end_of_turn": a ?? 0, "transcription": transcription, "total": 400]] }
        return turn
    }

    func step(_ talkers: Int, _ turns: [TalkerTurn], serverCPU: Double? = 10, wall: Double = 100) -> TalkersStep {
        TalkersStep(talkers: talkers, turns: turns, wallSeconds: wall, clientCPU: CPUTime(user: 1, system: 1), stealFraction: 0.02,
                    serverCPUSeconds: serverCPU, serverStages: [:])
    }

    @Test func theTimelineEventGivesItsStagesInMilliseconds() throws {
        let event = try JSON(parsing: #"{"type":"parley.turn.timeline","event_id":"e","item_id":"item_1","response_id":"resp_1","stages_ms":{"end_of_turn":228,"transcription":31,"total":428}}"#)
        #expect(TalkerTurn.stages(of: event) == ["end_of_turn": 228, "transcription": 31, "total": 428])
        #expect(TalkerTurn.stages(of: try JSON(parsing: #"{"type":"response.done","stages_ms":{"total":1}}"#)) == nil)
        #expect(TalkerTurn.stages(of: try JSON(parsing: #"{"type":"parley.turn.timeline"}"#)) == nil)
    }

    @Test func aStepSummarisesEachLatencyAndStageByNearestRank() {
        let turns = (1...10).map { turn($0, a: Double($0) * 100, b: Double($0) * 10, transcription: Double($0)) } + [turn(11, a: nil, b: nil)]
        let summary = step(10, turns)
        let a = summary.latencies[0], b = summary.latencies[1], c = summary.latencies[2]
        #expect(a.values.count == 10 && NearestRank.percentile(50, of: a.values) == 500 && NearestRank.percentile(99, of: a.values) == 1_000)
        #expect(NearestRank.percentile(90, of: b.values) == 90)
        #expect(NearestRank.percentile(100, of: c.values) == 1_100)
        #expect(summary.stageValues("transcription").count == 10)
        #expect(NearestRank.percentile(50, of: summary.stageValues("transcription")) == 5)
        #expect(summary.stageValues("synthesis").isEmpty)
        #expect(summary.serverCores == 0.1)
        let json = summary.json
        #expect(json["latency_ms"]?["last_word_to_speech_stopped_ms"]?["p50"]?.double == 500)
        #expect(json["latency_ms"]?["barge_in_to_cancelled_ms"]?["count"]?.int == 0)
        #expect(json["stages_ms"]?["transcription"]?["p99"]?.double == 10)
        #expect(json["stages_ms"]?["synthesis"]?["p50"] == .null)
        #expect(json["turn_records"]?.array?.count == 11)
        #expect(summary.text.contains("(a) last word sent → speech_stopped"))
        #expect(summary.text.contains("transcription"))
    }

    @Test func bargeInsCountOnlyTheTurnsThatSpokeOver() {
        var cut = turn(1, a: 200, b: 300)
        cut.bargeIn = true
        cut.bargeCut = true
        cut.bargeToLastAudioMs = -40
        cut.bargeToCancelledMs = 250
        var kept = turn(2, a: 200, b: 300)
        kept.bargeIn = true
        kept.bargeCut = false
        let summary = step(2, [cut, kept, turn(3, a: 1, b: 1)])
        #expect(summary.bargeCuts.text == "1 of 2")
        #expect(summary.latencies[3].values == [-40])
        #expect(summary.latencies[5].values == [250])
        #expect(summary.json["turn_records"]?.array?[2]["barge_in_cut"] == nil)
    }

    @Test func talkersPerCoreIsTheLargestStepWithinTheBoundPerServerCore() {
        func fast(_ n: Int, transcription: Double) -> [TalkerTurn] { (0..<n).map { turn($0, a: 100, b: 100, transcription: transcription) } }
        let steps = [step(1, fast(5, transcription: 50), serverCPU: 20), step(5, fast(5, transcription: 200), serverCPU: 50),
                     step(10, fast(5, transcription: 700), serverCPU: 120), step(20, fast(5, transcription: 100), serverCPU: 250)]
        let summary = TalkersSummary(steps: steps, turnDetection: "semantic_vad", voices: [.joe], turnsPerTalker: 5, bargeInEvery: 3,
                                     transcriptionBoundMs: 500, cores: 2)
        // 10 misses the bound, 20 used every core: 5 talkers at 0.5 server cores.
        #expect(summary.talkersPerCore?.step.talkers == 5)
        #expect(summary.talkersPerCore?.perCore == 10)
        #expect(summary.talkersPerCoreLine.hasPrefix("talkers per core: 10.0 (5 talkers"))
        #expect(summary.json["talkers_per_core"]?["talkers"]?.int == 5)
        let none = TalkersSummary(steps: [step(1, fast(1, transcription: 900))], turnDetection: "server_vad", voices: [.joe], turnsPerTalker: 1,
                                  bargeInEvery: 0, transcriptionBoundMs: 500, cores: 2)
        #expect(none.talkersPerCore == nil)
        #expect(none.json["talkers_per_core"] == .null)
    }

    @Test func theStageHistogramIsReadOneStageAtATime() throws {
        let text = """
            parley_turn_stage_seconds_bucket{stage="transcription",le="0.1"} 3
            parley_turn_stage_seconds_bucket{stage="transcription",le="+Inf"} 4
            parley_turn_stage_seconds_sum{stage="transcription"} 0.9
            parley_turn_stage_seconds_count{stage="transcription"} 4
            parley_turn_stage_seconds_bucket{stage="synthesis",le="0.1"} 0
            parley_turn_stage_seconds_bucket{stage="synthesis",le="+Inf"} 7
            parley_turn_stage_seconds_sum{stage="synthesis"} 3
            parley_turn_stage_seconds_count{stage="synthesis"} 7
            """
        let metrics = ServerMetrics(parsing: text)
        let transcription = try #require(ServerHistogram(TurnStageNames.histogram, in: metrics, label: #"stage="transcription""#))
        #expect(transcription.count == 4 && transcription.sum == 0.9 && transcription.percentileBound(50) == 0.1)
        #expect(try #require(ServerHistogram(TurnStageNames.histogram, in: metrics)).count == 11)
        #expect(ServerHistogram(TurnStageNames.histogram, in: metrics, label: #"stage="total""#) == nil)
    }

    func event(_ type: String, _ ms: UInt64, audioMs: Double = 0) -> RealtimeSpeaker.Received {
        RealtimeSpeaker.Received(type: type, event: nil, at: ms * 1_000_000, audioMs: audioMs)
    }

    @Test func aReplyIsOverWhenItsAudioHasPlayedOut() {
        let events = [event(Talker.stopped, 1_000), event("response.created", 1_400), event(Talker.audio, 1_500, audioMs: 1_000), event("response.done", 1_600)]
        #expect(!Talker.replyOver(events, after: 900_000_000, now: 2_000_000_000))
        #expect(Talker.replyOver(events, after: 900_000_000, now: 2_700_000_000))
        // No turn end after the last word yet: not over.
        #expect(!Talker.replyOver(events, after: 1_100_000_000, now: 9_000_000_000))
        // A turn that got no reply at all is given up 15 s after it ended.
        #expect(!Talker.replyOver([event(Talker.stopped, 1_000)], after: 0, now: 15_000_000_000))
        #expect(Talker.replyOver([event(Talker.stopped, 1_000)], after: 0, now: 16_100_000_000))
    }

    @Test func theReplyToATurnIsTheOneCreatedAfterItNotOneStillSpeaking() throws {
        // A reply to a pause taken for the end speaks on through the rest of the sentence; the
        // turn's own reply is created when that one is done.
        let events = [event("response.created", 500), event(Talker.audio, 900, audioMs: 20_000), event(Talker.stopped, 1_000),
                      event(Talker.audio, 1_100, audioMs: 100), event("response.done", 20_000), event("response.created", 20_000),
                      event(Talker.audio, 20_300, audioMs: 2_000), event("response.done", 21_000)]
        let reply = try #require(Talker.reply(events, after: events[2]))
        #expect(reply.created.at == 20_000_000_000 && reply.firstAudio?.at == 20_300_000_000 && reply.done?.at == 21_000_000_000)
        #expect(!Talker.replyOver(Array(events.prefix(5)), after: 950_000_000, now: 20_500_000_000))
        // A player runs the old reply's audio out (21 s), then the new one's 2 s.
        #expect(!Talker.replyOver(events, after: 950_000_000, now: 23_000_000_000))
        #expect(Talker.replyOver(events, after: 950_000_000, now: 23_300_000_000))
        // Nothing created after the turn, but the old reply still playing: not given up yet.
        #expect(!Talker.replyOver(Array(events.prefix(4)), after: 950_000_000, now: 17_000_000_000))
    }

    @Test func aTurnsTraceFoldsRunsOfAudioDeltas() throws {
        let done = try JSON(parsing: #"{"type":"response.done","response":{"status":"cancelled"}}"#)
        let events = [RealtimeSpeaker.Received(type: Talker.stopped, event: nil, at: 1_500_000_000),
                      RealtimeSpeaker.Received(type: Talker.audio, event: nil, at: 2_000_000_000),
                      RealtimeSpeaker.Received(type: Talker.audio, event: nil, at: 2_100_000_000),
                      RealtimeSpeaker.Received(type: "response.done", event: done, at: 2_250_000_000),
                      RealtimeSpeaker.Received(type: Talker.audio, event: nil, at: 3_000_000_000)]
        #expect(TalkerTurn.trace(events, from: 1_000_000_000) == ["+500 input_audio_buffer.speech_stopped", "+1000 response.output_audio.delta ×2",
                                                                  "+1250 response.done cancelled", "+2000 response.output_audio.delta ×1"])
    }

    @Test func theReportShowsTheLatencyAndStageTablesWithCPUAndSteal() throws {
        let turns = (1...4).map { turn($0, a: 300, b: 700, transcription: 120) }
        let metrics = ServerMetrics(parsing: """
            parley_turn_stage_seconds_bucket{stage="transcription",le="0.1"} 1
            parley_turn_stage_seconds_bucket{stage="transcription",le="0.15"} 4
            parley_turn_stage_seconds_bucket{stage="transcription",le="+Inf"} 4
            parley_turn_stage_seconds_sum{stage="transcription"} 0.5
            parley_turn_stage_seconds_count{stage="transcription"} 4
            """)
        let histogram = try #require(ServerHistogram(TurnStageNames.histogram, in: metrics, label: #"stage="transcription""#))
        let step = TalkersStep(talkers: 10, turns: turns, wallSeconds: 100, clientCPU: CPUTime(user: 4, system: 1), stealFraction: 0.031,
                               serverCPUSeconds: 80, serverStages: ["transcription": histogram])
        let summary = TalkersSummary(steps: [step], turnDetection: "semantic_vad", voices: [.joe], turnsPerTalker: 4, bargeInEvery: 3,
                                     transcriptionBoundMs: 500, cores: 2)
        let parsed = try JSON(parsing: summary.json.pretty)
        let report = LoadReport(title: "t", runs: [("talkers", parsed)])
        let latency = try #require(report.tables.first { $0.name == "talkers" })
        #expect(latency.markdown.contains("| talkers | 10 | 4 | 300 / 300 (4) | 700 / 700 (4) | 1000 / 1000 (4) | n/a | n/a | 0 of 0 | 0.80 | 0.05 | 3.1 % |"))
        let stages = try #require(report.tables.first { $0.name == "talkers-stages" })
        #expect(stages.markdown.contains("| talkers | 10 | end_of_turn | 300 / 300 (4) | n/a | 0.05 | 3.1 % |"))
        #expect(stages.markdown.contains("|  |  | transcription | 120 / 120 (4) | ≤ 150 ms / ≤ 150 ms (4) |  |  |"))
        #expect(report.markdown.contains("| talkers | talkers | 10 talkers, semantic_vad | last word → reply audio p99 1000 ms |"))
    }

    @Test func optionsAreValidated() throws {
        #expect(try TalkersCommand.parse(["--talkers", "1,5,10,20"]).steps == [1, 5, 10, 20])
        #expect(try TalkersCommand.parse([]).steps == [10])
        for bad in [["--talkers", "0"], ["--talkers", "5,,10"], ["--talkers", "ten"], ["--turn-detection", "none"], ["--turns-per-talker", "0"],
                    ["--duration", "5"], ["--barge-in-every", "-1"], ["--voices", "joe,bob"], ["--url", "ws://10.1.2.3:8080"],
                    ["--url", "ws://127.0.0.1:8080/ws"], ["--transcription-bound-ms", "0"]] {
            #expect(throws: (any Error).self, "\(bad)") { try TalkersCommand.parse(bad) }
        }
        let update = try JSON(parsing: try TalkersCommand.parse(["--turn-detection", "server_vad"]).sessionUpdate)
        #expect(update["session"]?["include"]?.array == [.string("parley.turn.timeline")])
        #expect(update["session"]?["audio"]?["input"]?["turn_detection"]?["type"]?.string == "server_vad")
        #expect(try JSON(parsing: try TalkersCommand.parse([]).sessionUpdate)["session"]?["audio"]?["input"]?["turn_detection"]?["eagerness"]?.string == "auto")
    }
}
