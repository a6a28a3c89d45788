import Glibc
import JSON
import Testing
import TestSupport

/// A reconnect the client gives up on, or that drops, while the store is slow: the server must not
/// use up the token the client still holds. With Redis stopped (SIGSTOP: connected, answering
/// nothing) reconnects reach the nodes and hang up before `session.resumed`; once Redis answers,
/// the client's same token resumes the session, and the token it is then given works on another
/// node. (make test's chaos run lost two sessions to `resume_token_invalid` so, 2026-11-27.)
@Suite struct ResumeUntoldTokenTests {
    /// One loop: a /metrics request is answered after every event the node read before it.
    func node(store: String) throws -> ServerProcess {
        try ServerProcess(arguments: "--loops 1 --transcriber none --synthesizer none --turn-model none --vad energy --store \(store)")
    }

    /// A reconnect with `token`, upgraded and nothing read after.
    func reconnect(_ port: Int, _ session: MultiNodeTests.Session) throws -> TestClient {
        let client = try TestClient(port: port)
        #expect(try client.upgrade(path: "/v1/realtime?resume_token=\(session.token)&last_seq=\(session.seq)").status == 101)
        return client
    }

    @Test func reconnectsAbandonedWhileTheStoreIsSlowLeaveTheClientsTokenGood() throws {
        let redis = try RedisServer()
        let store = "redis://127.0.0.1:\(redis.port)"
        let home = try node(store: store), away = try node(store: store)
        let session = try MultiNodeTests.Session(port: home.port)
        let sessionID = session.sessionID
        session.client.hangUp()
        let detached = "parley_sessions_detached"
        #expect(RedisServer.waitUntil(seconds: 5) { home.metric(detached) == 1 }, "parked at home")

        redis.pause()
        // The other node begins to read the session from the store; its client goes.
        try reconnect(away.port, session).hangUp()
        // Home claims it from memory and asks the store for the next token; its client goes before
        // the answer, and the session is parked again.
        try reconnect(home.port, session).hangUp()
        #expect(RedisServer.waitUntil(seconds: 5) { home.metric(detached) == 1 }, "parked at home again")
        // Back once more while that rotation still waits: this one stays.
        let back = try reconnect(home.port, session)
        redis.carryOn()

        let resumed = try back.readEvent()
        #expect(resumed["type"]?.string == "session.resumed" && resumed["session_id"]?.string == sessionID, "\(resumed)")
        let next = try #require(resumed["token"]?.string)
        #expect(next != session.token)
        back.hangUp()
        #expect(RedisServer.waitUntil(seconds: 5) { home.metric(detached) == 1 }, "parked at home a third time")

        // The store holds the token the client was given: another node resumes with it.
        session.token = next
        let there = try reconnect(away.port, session)
        let restored = try there.readEvent()
        #expect(restored["type"]?.string == "session.resumed" && restored["session_id"]?.string == sessionID, "\(restored)")
        #expect(away.metric("parley_sessions_resumed_total{result=\"store\"}") == 1)
        #expect(home.metric("parley_sessions_resumed_total{result=\"memory\"}") == 1)
    }
}
