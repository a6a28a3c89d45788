import Glibc
import Testing
import TestSupport

/// The families on /metrics, by name and TYPE, as an operator's dashboards and alerts know them:
/// one process with a store and speech, and the supervisor's merge of its workers. A family
/// declared but never registered, or written by hand with another TYPE, fails here.
@Suite struct MetricsScrapeTests {
    /// Every family of a process serving sessions, speech and calls, with SQLite behind resume.
    static let serving: Set<String> = [
        "parley_accounted_bytes gauge", "parley_accounted_bytes_by_carrier gauge", "parley_accounted_bytes_per_connection gauge", "parley_audio_input_frames_total counter",
        "parley_audio_input_lag_seconds histogram", "parley_backchannels_ignored_total counter", "parley_phone_lines_denoised_total counter", "parley_interruptions_total counter",
        "parley_turn_premature_ends_total counter", "parley_turn_ends_total counter", "parley_turn_model_seconds histogram", "parley_turn_model_failures_total counter", "parley_turn_stage_seconds histogram", "parley_echo_guard_frames_total counter",
        "parley_speculative_replies_total counter", "parley_speculative_tokens_wasted_total counter",
        "parley_prepared_speech_total counter",
        "parley_speech_helper_up gauge", "parley_speech_helper_restarts_total counter", "parley_speech_busy gauge",
        "parley_replies_paused_total counter", "parley_turns_reopened_total counter", "parley_replies_resumed_total counter", "parley_connections_accepted_total counter", "parley_connections_closed_total counter", "parley_connections_dropped_total counter",
        "parley_conversation_items_truncated_total counter",
        "parley_connections_open gauge", "parley_connections_refused_total counter", "parley_draining gauge",
        "parley_loop_iteration_seconds histogram", "parley_network_received_bytes_total counter", "parley_network_sent_bytes_total counter",
        "parley_process_cpu_seconds_total counter", "parley_process_proportional_memory_bytes gauge",
        "parley_process_resident_memory_bytes gauge", "parley_process_heap_in_use_bytes gauge", "parley_process_startup_resident_memory_bytes gauge",
        "parley_resident_bytes_per_connection gauge", "parley_resume_gap_seconds histogram", "parley_server_added_latency_seconds histogram",
        "parley_session_limit_closes_total counter", "parley_session_responses_total counter", "parley_session_turns_total counter",
        "parley_sessions_detached gauge", "parley_sessions_expired_total counter", "parley_resume_store_waits_given_up_total counter", "parley_sessions_open gauge",
        "parley_sessions_resumed_total counter", "parley_speech_encoding_real_time_factor histogram", "parley_speech_overloaded_total counter",
        "parley_speech_queue_depth gauge", "parley_speech_recognition_real_time_factor histogram", "parley_speech_recognizers_busy gauge",
        "parley_speech_stopped_to_response_created_seconds histogram", "parley_speech_synthesis_real_time_factor histogram",
        "parley_speech_workers_busy gauge", "parley_store_bytes_written_total counter", "parley_store_write_seconds histogram",
        "parley_store_writes_total counter", "parley_tenant_local_admissions_total counter", "parley_tenant_refusals_total counter",
        "parley_tenant_sessions_open gauge", "parley_tenant_shared_count_up gauge",
        "parley_tenant_sessions_total counter", "parley_tool_calls_total counter", "parley_tool_client_seconds histogram",
        "parley_mcp_calls_total counter", "parley_mcp_lists_total counter", "parley_mcp_call_seconds histogram", "parley_mcp_list_seconds histogram",
        "parley_tool_fillers_total counter",
        "parley_transcription_seconds histogram", "parley_twilio_calls_open gauge", "parley_twilio_calls_total counter",
        "parley_twilio_clears_total counter", "parley_twilio_dtmf_digits_total counter", "parley_twilio_marks_outstanding gauge",
        "parley_twilio_messages_rejected_total counter", "parley_twilio_signature_refusals_total counter",
        "parley_upstream_apologies_total counter", "parley_upstream_circuit_open gauge", "parley_upstream_fallbacks_total counter",
        "parley_upstream_first_token_seconds histogram", "parley_upstream_retries_total counter", "parley_upstream_stalls_total counter",
        "parley_vad_seconds histogram", "parley_voice_to_voice_seconds histogram",
        "parley_webrtc_audio_frames_total counter", "parley_webrtc_calls_ended_total counter", "parley_webrtc_calls_open gauge",
        "parley_webrtc_datagrams_dropped_total counter", "parley_webrtc_ice_refusals_total counter", "parley_webrtc_offers_refused_total counter",
        "parley_websocket_messages_received_total counter",
        "parley_websocket_messages_sent_total counter",
    ]

    /// What the supervisor of `--workers` adds, and what the merge writes per worker.
    static let supervised: Set<String> = [
        "parley_worker_info gauge", "parley_worker_proportional_memory_bytes gauge", "parley_worker_resident_memory_bytes gauge",
        "parley_worker_restarts_total counter", "parley_worker_sessions_open gauge", "parley_workers gauge",
    ]
    static let store: Set<String> = ["parley_store_bytes_written_total counter", "parley_store_write_seconds histogram", "parley_store_writes_total counter"]

    /// "name TYPE" for each family; every family's HELP comes just before its TYPE, once.
    func families(_ exposition: String) -> [String] {
        let lines = exposition.split(separator: "\n")
        var found: [String] = []
        for (i, line) in lines.enumerated() where line.hasPrefix("# TYPE ") {
            let words = line.split(separator: " ")
            #expect(i > 0 && lines[i - 1].hasPrefix("# HELP \(words[2]) "), "\(words[2]) has no HELP line before its TYPE")
            found.append("\(words[2]) \(words[3])")
        }
        return found
    }

    func scrape(_ process: ServerProcess) throws -> String {
        let client = try TestClient(port: process.port)
        try client.send("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n")
        return try client.readResponse().body
    }

    @Test func oneProcessShowsEveryFamilyOnceByName() throws {
        let path = "/tmp/parley-scrape-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).db"
        defer { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } }
        let process = try ServerProcess(arguments: "--loops 2 --store sqlite:\(path)")
        let found = families(try scrape(process))
        #expect(Set(found) == Self.serving)
        #expect(found.count == Self.serving.count, "a family is written twice")
        #expect(found == found.sorted(), "families are rendered in name order")
    }

    @Test func theSupervisorsMergeShowsTheSameFamiliesAndItsOwn() throws {
        let process = try ServerProcess(arguments: "--loops 1 --workers 2")
        // The supervisor's figures join the merge once it has published them.
        var found: [String] = []
        for _ in 0..<40 where !Set(found).isSuperset(of: Self.supervised) {
            found = families(try scrape(process))
            usleep(100_000)
        }
        #expect(Set(found) == Self.serving.subtracting(Self.store).union(Self.supervised))
        #expect(found.count == Set(found).count, "a family is written twice")
    }
}
