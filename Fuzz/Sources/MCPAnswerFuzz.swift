import JSON
@testable import MCP

/// The answer an MCP server gives to one POST (`MCPAnswerReader`), read as the client reads it: a
/// head, then the body in reads of any size; and a result it yields read as a tool list page and
/// as a tool call's output, as `MCPClient` reads them.
///
/// The input's first byte sets the head: bit 0 an event stream (else JSON), bit 1 a request that
/// carried a session id, bits 2 and 3 the status (200, 202, 404, 500), bit 4 a notification (no
/// id). Then a `Reads` byte and the body.
///
/// Checks: no trap; the reader stops at its first outcome and keeps no more than its limit (a
/// result comes from at most `limit` bytes); the outcome does not depend on how the body was cut
/// (but for where the limit falls); every error has one of the Realtime API's three kinds and a
/// message; a page's tools have usable names and write out as JSON that parses back.
enum MCPAnswerFuzz {
    static let limit = 2048

    static func run(_ input: UnsafeRawBufferPointer) {
        guard let setup = input.first else { return }
        let reads = Reads(UnsafeRawBufferPointer(rebasing: input[1...]))
        let status = [200, 202, 404, 500][Int(setup >> 2 & 3)]
        let type = setup & 1 == 1 ? "text/event-stream" : "application/json"
        let id: Int? = setup & 16 == 0 ? 7 : nil
        let (split, splitBytes) = read(reads.reads, status: status, type: type, id: id, session: setup & 2 != 0)
        let (whole, _) = read(reads.stream.isEmpty ? [] : [reads.stream], status: status, type: type, id: id, session: setup & 2 != 0)
        if case .result = split { precondition(splitBytes <= limit, "a result from \(splitBytes) bytes") }
        if split != .failed(.tooLarge(limit: limit)), whole != .failed(.tooLarge(limit: limit)) {
            precondition(split == whole, "\(split) read whole is \(whole)")
        }
        switch split {
        case .failed(let error):
            precondition(["protocol_error", "tool_execution_error", "http_error"].contains(error.type) && !error.message.isEmpty)
        case .result(let result):
            if case .success(let page) = MCPTool.page(result) {
                for tool in page.tools {
                    precondition(!tool.name.isEmpty && tool.name.utf8.count <= MCPTool.maxNameBytes)
                    precondition((try? JSON(parsing: tool.json.description)) == tool.json, "a tool does not write out as JSON")
                }
            }
            if case .failure(let error) = MCPToolOutput.decode(result) { precondition(!error.description.isEmpty) }
        case .needMore, .sessionGone:
            break
        }
    }

    /// The outcome, and the body bytes fed up to it.
    static func read(_ reads: [UnsafeRawBufferPointer], status: Int, type: String, id: Int?, session: Bool) -> (MCPAnswerReader.Outcome, Int) {
        var reader = MCPAnswerReader(id: id, limit: limit, carriedSession: session)
        let head = reader.head(status: status, contentType: type, contentLength: nil)
        guard head == .needMore else { return (head, 0) }
        var fed = 0
        for read in reads {
            fed += read.count
            let outcome = reader.body(read)
            guard outcome == .needMore else { return (outcome, fed) }
        }
        return (reader.end(), fed)
    }
}
