import Access
import JSON
import Loop
import Server
import Store
import Synchronization

/// Where finished sessions' reports go and are read back: the store when there is one (SQLite or
/// Redis, so a report outlives its process and is read on any node), else this process's memory,
/// the last `memoryReports` of them. Read at `GET /v1/sessions/{id}` with an operator's key.
public final class SessionReports: Sendable {
    public static let memoryReports = 1_000
    private let store: (any ConversationStore)?
    private let keepSeconds: Int
    /// Without a store: the reports by session id, and their order, oldest first.
    private let memory = Mutex<(reports: [String: String], order: [String])>(([:], []))

    public init(store: (any ConversationStore)?, keepSeconds: Int) {
        self.store = store
        self.keepSeconds = keepSeconds
    }

    func write(sessionID: String, report: JSON, on loop: EventLoop) {
        guard keepSeconds > 0 else { return }
        let text = report.description
        if let store { return store.reportWritten(sessionID: sessionID, report: text, keepSeconds: keepSeconds, on: loop) }
        memory.withLock { memory in
            if memory.reports.updateValue(text, forKey: sessionID) == nil { memory.order.append(sessionID) }
            if memory.order.count > Self.memoryReports { memory.reports[memory.order.removeFirst()] = nil }
        }
    }

    func read(sessionID: String, on loop: EventLoop, _ done: @escaping (Result<String?, StoreError>) -> Void) {
        if let store { return store.report(sessionID: sessionID, on: loop, done) }
        done(.success(memory.withLock { $0.reports[sessionID] }))
    }

    /// A session id as Parley makes them; anything else is not looked up.
    static func isSessionID(_ text: Substring) -> Bool {
        text.hasPrefix("sess_") && text.utf8.count <= 64
            && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || $0 == 0x2D }
    }

    /// `GET /v1/sessions/{id}`: the report as JSON, for an operator only (`Access.operatorAllowed`).
    func serve(_ request: HTTPRequest, _ stream: HTTPResponseStream, access: Access) {
        func answer(_ response: HTTPResponse) {
            stream.start(response.status, headers: response.headers)
            stream.write(response.body)
            stream.end()
        }
        if let refusal = access.operatorAllowed(request) { return answer(refusal.response) }
        let id = request.path.dropFirst(RealtimeEndpoint.reportsPrefix.count)
        guard Self.isSessionID(id) else {
            return answer(.jsonError(.notFound, code: "session_not_found", message: "no report for that session"))
        }
        read(sessionID: String(id), on: stream.loop) { result in
            switch result {
            case .success(let report?):
                answer(HTTPResponse(status: .ok, contentType: "application/json", body: report))
            case .success(nil):
                answer(.jsonError(.notFound, code: "session_not_found", message: "no report for \(id): unknown, still open, or past its retention"))
            case .failure(let error):
                answer(.jsonError(.serviceUnavailable, code: "store_unavailable", message: "the report could not be read: \(error)"))
            }
        }
    }
}
