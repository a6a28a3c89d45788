import Access
import JSON
import Loop
import Server
import Store

/// Where finished sessions' reports go and are read back: the store when there is one (SQLite or
/// Redis, so a report outlives its process and is read on any node), else this process's memory,
/// the last `memoryReports` of them. Read at `GET /v1/sessions/{id}` with an operator's key.
public final class SessionReports: Sendable {
    public static let memoryReports = 1_000
    private let documents: KeptDocuments

    public init(store: (any ConversationStore)?, keepSeconds: Int) {
        documents = KeptDocuments(.report, store: store, keepSeconds: keepSeconds, memoryLimit: Self.memoryReports)
    }

    func write(sessionID: String, report: JSON, on loop: EventLoop) {
        documents.write(id: sessionID, text: report.description, on: loop)
    }

    func read(sessionID: String, on loop: EventLoop, _ done: @escaping (Result<String?, StoreError>) -> Void) {
        documents.read(id: sessionID, on: loop, done)
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
