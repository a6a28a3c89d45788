import Testing
import Metrics
import TestSupport
@testable import Session

/// The session series are declared in a registry and written through `PrometheusText`: each
/// family's text (HELP, TYPE and sample lines) is what it was when each wrote its own, and the
/// registry renders the families ordered by name (the speech series: ModelsTests'
/// SpeechMetricsTextTests).
@Suite struct SessionMetricsTextTests {
    @Test func sessionSeriesRenderAsBefore() {
        let session = SessionMetrics()
        session.sessionsOpen.add(3)
        session.responses.add(1, .cancelled)
        session.audioLag.observe(seconds: 0.002)
        let expected = """
            # HELP parley_sessions_open Realtime sessions open (/v1/realtime and /ws).
            # TYPE parley_sessions_open gauge
            parley_sessions_open 3
            # HELP parley_session_turns_total Responses started (turns).
            # TYPE parley_session_turns_total counter
            parley_session_turns_total 0
            # HELP parley_session_responses_total Responses finished, by status.
            # TYPE parley_session_responses_total counter
            parley_session_responses_total{status="completed"} 0
            parley_session_responses_total{status="cancelled"} 1
            parley_session_responses_total{status="failed"} 0
            parley_session_responses_total{status="incomplete"} 0

            """ + session.speechToResponse.render() + """
            # HELP parley_audio_input_frames_total Audio frames (Opus packets, or pcm16 appends) received, by outcome.
            # TYPE parley_audio_input_frames_total counter
            parley_audio_input_frames_total{result="processed"} 0
            parley_audio_input_frames_total{result="rejected"} 0

            """ + session.audioLag.render() + """
            # HELP parley_session_limit_closes_total Sessions closed (1008) for passing a limit, by which.
            # TYPE parley_session_limit_closes_total counter
            parley_session_limit_closes_total{reason="events"} 0
            parley_session_limit_closes_total{reason="audio"} 0
            parley_session_limit_closes_total{reason="duration"} 0
            parley_session_limit_closes_total{reason="tokens"} 0
            # HELP parley_tool_calls_total Function calls the model made, by how their response ended.
            # TYPE parley_tool_calls_total counter
            parley_tool_calls_total{status="completed"} 0
            parley_tool_calls_total{status="incomplete"} 0

            """ + session.toolTime.render() + """
            # HELP parley_sessions_detached Resumable sessions whose client is gone, within their grace window.
            # TYPE parley_sessions_detached gauge
            parley_sessions_detached 0
            # HELP parley_sessions_resumed_total Reconnects with a resume token, by outcome: resumed here (memory), restored from the store, refused, taken (another node resumed it first), or told to retry (the store could not answer).
            # TYPE parley_sessions_resumed_total counter
            parley_sessions_resumed_total{result="memory"} 0
            parley_sessions_resumed_total{result="store"} 0
            parley_sessions_resumed_total{result="refused"} 0
            parley_sessions_resumed_total{result="taken"} 0
            parley_sessions_resumed_total{result="out_of_range"} 0
            parley_sessions_resumed_total{result="retry"} 0

            """ + session.resumeSeconds.render() + """
            # HELP parley_sessions_expired_total Resumable sessions ended because their client did not come back within the grace window.
            # TYPE parley_sessions_expired_total counter
            parley_sessions_expired_total 0
            # HELP parley_resume_store_waits_given_up_total Times a resumable session stopped waiting for the store to keep a completed item and told its client anyway (--resume-store-wait-seconds).
            # TYPE parley_resume_store_waits_given_up_total counter
            parley_resume_store_waits_given_up_total 0
            # HELP parley_interruptions_total Replies cut by the user's speech (barge-ins): responses cancelled with reason turn_detected.
            # TYPE parley_interruptions_total counter
            parley_interruptions_total 0
            # HELP parley_phone_lines_denoised_total Phone calls (SIP, /twilio) whose line was found noisy and denoised from then on (--phone-line-denoise auto).
            # TYPE parley_phone_lines_denoised_total counter
            parley_phone_lines_denoised_total 0
            # HELP parley_backchannels_ignored_total Speech during a spoken reply whose words were all backchannels (uh-huh, okay): the reply resumed.
            # TYPE parley_backchannels_ignored_total counter
            parley_backchannels_ignored_total 0
            # HELP parley_replies_paused_total Spoken replies paused by user speech, before it was known to be a barge-in.
            # TYPE parley_replies_paused_total counter
            parley_replies_paused_total 0
            # HELP parley_turns_reopened_total Turns that went on after they had ended, before their reply was heard: the reply withdrawn, the two halves one item.
            # TYPE parley_turns_reopened_total counter
            parley_turns_reopened_total 0
            # HELP parley_replies_resumed_total Paused replies resumed, by why: the speech was only backchannels, or ended short (a noise, a short sound).
            # TYPE parley_replies_resumed_total counter
            parley_replies_resumed_total{reason="backchannel"} 0
            parley_replies_resumed_total{reason="short"} 0
            # HELP parley_turn_premature_ends_total Turns that server VAD ended although the user went on speaking within 1 s of the end (a pause taken for the end of a turn).
            # TYPE parley_turn_premature_ends_total counter
            parley_turn_premature_ends_total 0
            # HELP parley_turn_ends_total Turns server VAD ended, by what ended them: the end-of-turn model (semantic_vad, the words agreeing when read), the words alone past a pause (finished words the model did not confirm, or digits read out), the longest wait when nothing said finished, or silence alone.
            # TYPE parley_turn_ends_total counter
            parley_turn_ends_total{cause="model"} 0
            parley_turn_ends_total{cause="words"} 0
            parley_turn_ends_total{cause="max_wait"} 0
            parley_turn_ends_total{cause="silence"} 0
            # HELP parley_turn_model_failures_total End-of-turn questions unanswered, by why (the helper down or starting, or past the deadline): those turns ended by silence.
            # TYPE parley_turn_model_failures_total counter
            parley_turn_model_failures_total{reason="unavailable"} 0
            parley_turn_model_failures_total{reason="timeout"} 0
            # HELP parley_echo_guard_frames_total 10 ms input frames of echo-guarded sessions during a reply: run through the echo canceller, and held by the gate as the reply's own echo (not speech).
            # TYPE parley_echo_guard_frames_total counter
            parley_echo_guard_frames_total{result="cancelled"} 0
            parley_echo_guard_frames_total{result="held"} 0
            # HELP parley_conversation_items_truncated_total Conversation items dropped from sessions' histories by truncation (the budget of --max-history-bytes, the model's context, session.truncation).
            # TYPE parley_conversation_items_truncated_total counter
            parley_conversation_items_truncated_total 0
            # HELP parley_speculative_replies_total Replies begun on the words so far while the end-of-turn model weighed a silence, by what became of them: used as the turn's response, restarted (the final words or the session differed), cancelled (the user went on, or the turn was cleared), failed.
            # TYPE parley_speculative_replies_total counter
            parley_speculative_replies_total{outcome="used"} 0
            parley_speculative_replies_total{outcome="restarted"} 0
            parley_speculative_replies_total{outcome="cancelled"} 0
            parley_speculative_replies_total{outcome="failed"} 0
            # HELP parley_speculative_tokens_wasted_total Tokens (in and out, as the model reported them or estimated) of speculative replies that were not used.
            # TYPE parley_speculative_tokens_wasted_total counter
            parley_speculative_tokens_wasted_total 0
            # HELP parley_prepared_speech_total Speculative replies' first pieces of speech made before their turn ended (on the turn's settled words), by what became of them: used as the reply's first sound, or dropped unheard.
            # TYPE parley_prepared_speech_total counter
            parley_prepared_speech_total{outcome="used"} 0
            parley_prepared_speech_total{outcome="dropped"} 0

            """ + session.turnModelTime.render()
        // The stages' family, eight histograms under one HELP, is checked on its own below.
        let rendered = ExpositionFamilies.split(session.render())
        let stageFamily = rendered.filter { $0.hasPrefix("# HELP parley_turn_stage_seconds ") }
        #expect(rendered.filter { !$0.hasPrefix("# HELP parley_turn_stage_seconds ") }.joined() == ExpositionFamilies.byName([expected]))
        #expect(stageFamily.count == 1)
        for stage in TurnTimeline.names {
            #expect(stageFamily.first?.contains("parley_turn_stage_seconds_count{stage=\"\(stage)\"} 0\n") == true, "\(stage)")
        }
        #expect(ExpositionFamilies.split(session.render()).count == 30)
        #expect(session.audioLag.render().contains("parley_audio_input_lag_seconds_bucket{le=\"0.002\"} 1\n"))
    }
}
