import JSON
@testable import MCP
import Testing

/// MCP's JSON-RPC messages as values: what the client sends, and how it reads tool lists, tool
/// results and errors.
@Suite struct MCPMessageTests {
    @Test func initializeNamesTheLatestRevisionNoCapabilitiesAndParley() {
        let message = MCPMessage.initialize(id: 1, clientVersion: "2.0")
        #expect(message.description == #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"parley","version":"2.0"}}}"#)
        #expect(MCPMessage.initialized.description == #"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
    }

    @Test func listToolsSendsTheCursorOnlyAfterTheFirstPage() {
        #expect(MCPMessage.listTools(id: 2, cursor: nil).description == #"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#)
        #expect(MCPMessage.listTools(id: 3, cursor: "abc=").description == #"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"abc="}}"#)
    }

    @Test func callAndCancelCarryNameArgumentsAndTheRequestID() {
        let call = MCPMessage.callTool(id: 4, name: "add", arguments: .object([("a", .int(1))]))
        #expect(call.description == #"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"add","arguments":{"a":1}}}"#)
        let cancel = MCPMessage.cancelled(requestID: 4, reason: "timed out")
        #expect(cancel.description == #"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"timed out"}}"#)
    }

    @Test func incomingMessagesAreToldApart() throws {
        #expect(MCPMessage.parse(try JSON(parsing: #"{"jsonrpc":"2.0","id":1,"result":{}}"#)) == .result(id: .int(1), .object([])))
        #expect(MCPMessage.parse(try JSON(parsing: #"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}"#))
            == .error(id: .null, code: -32600, message: "bad"))
        #expect(MCPMessage.parse(try JSON(parsing: #"{"jsonrpc":"2.0","id":"s1","method":"ping"}"#)) == .request(id: .string("s1"), method: "ping"))
        #expect(MCPMessage.parse(try JSON(parsing: #"{"jsonrpc":"2.0","method":"notifications/progress"}"#)) == .notification(method: "notifications/progress"))
    }

    @Test func somethingThatIsNotJSONRPC2IsNoMessage() throws {
        for text in [#"{"id":1,"result":{}}"#, #"{"jsonrpc":"1.0","id":1,"result":{}}"#, #"{"jsonrpc":"2.0","id":1}"#,
                     #"{"jsonrpc":"2.0","id":1,"error":{"message":"no code"}}"#, #"[1,2]"#, #""text""#] {
            #expect(MCPMessage.parse(try JSON(parsing: text)) == nil, "\(text)")
        }
    }

    @Test func aResponseIDMatchesAsANumberOrItsDecimalString() {
        #expect(MCPMessage.matches(.int(7), 7))
        #expect(MCPMessage.matches(.string("7"), 7))
        #expect(!MCPMessage.matches(.int(8), 7))
        #expect(!MCPMessage.matches(.number(7.5), 7))
    }

    @Test func aRevisionTheClientDoesNotSpeakIsRefused() throws {
        #expect(MCPMessage.negotiatedVersion(try JSON(parsing: #"{"protocolVersion":"2025-06-18"}"#)) == .success("2025-06-18"))
        #expect(MCPMessage.negotiatedVersion(try JSON(parsing: #"{"protocolVersion":"2024-11-05"}"#)) == .failure(.unsupportedVersion("2024-11-05")))
        #expect(MCPMessage.negotiatedVersion(.object([])) == .failure(.malformed("the initialize result has no protocolVersion")))
    }

    // MARK: Tools

    @Test func aToolListPageReadsToolsAndItsCursor() throws {
        let result = try JSON(parsing: """
            {"tools":[{"name":"add","description":"Adds.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
                      {"name":"bare"}],"nextCursor":"2"}
            """)
        let page = try MCPTool.page(result).get()
        #expect(page.nextCursor == "2")
        #expect(page.tools == [
            MCPTool(name: "add", description: "Adds.", inputSchema: .object([("type", .string("object"))]), annotations: .object([("readOnlyHint", .bool(true))])),
            MCPTool(name: "bare", inputSchema: MCPTool.emptySchema),
        ])
        #expect(page.tools[0].json.description == #"{"name":"add","description":"Adds.","input_schema":{"type":"object"},"annotations":{"readOnlyHint":true}}"#)
    }

    @Test func aMissingNullOrEmptyCursorEndsTheList() throws {
        for text in [#"{"tools":[]}"#, #"{"tools":[],"nextCursor":null}"#, #"{"tools":[],"nextCursor":""}"#] {
            #expect(try MCPTool.page(JSON(parsing: text)).get().nextCursor == nil)
        }
    }

    @Test func aToolWithoutANameOrWithASchemaThatIsNotAnObjectFailsTheList() throws {
        #expect(MCPTool.page(try JSON(parsing: #"{"tools":[{"description":"x"}]}"#)) == .failure(.malformed("tool 0 of the list has no usable name")))
        #expect(MCPTool.page(try JSON(parsing: #"{"tools":[{"name":"a","inputSchema":"x"}]}"#)) == .failure(.malformed("the input schema of tool a is not an object")))
        #expect(MCPTool.page(try JSON(parsing: #"{"tools":{}}"#)) == .failure(.malformed("the tools/list result has no tools array")))
        let long = String(repeating: "n", count: MCPTool.maxNameBytes + 1)
        #expect(MCPTool.page(.object([("tools", .array([.object([("name", .string(long))])]))])) == .failure(.malformed("tool 0 of the list has no usable name")))
    }

    @Test func aCallResultJoinsItsTextAndDescribesOtherContent() throws {
        let result = try JSON(parsing: """
            {"content":[{"type":"text","text":"first"},{"type":"image","data":"AAAA","mimeType":"image/png"},
                        {"type":"resource","resource":{"uri":"file:///a","text":"embedded"}},
                        {"type":"resource","resource":{"uri":"file:///b","mimeType":"application/pdf","blob":"AA=="}},
                        {"type":"resource_link","uri":"file:///c","name":"c.txt"},{"type":"video"}],
             "isError":false}
            """)
        #expect(MCPToolOutput.decode(result) == .success(MCPToolOutput(text: """
            first
            [image: image/png, about 3 bytes]
            embedded
            [resource: file:///b, application/pdf]
            [resource link: c.txt file:///c]
            [video content]
            """)))
    }

    @Test func isErrorMakesAToolExecutionErrorWithTheText() throws {
        let result = try JSON(parsing: #"{"content":[{"type":"text","text":"no such city"}],"isError":true}"#)
        let outcome = MCPToolOutput.decode(result)
        #expect(outcome == .failure(.toolFailed("no such city")))
        #expect(outcome.failureType == "tool_execution_error")
        #expect(MCPToolOutput.decode(try JSON(parsing: #"{"content":[],"isError":true}"#)) == .failure(.toolFailed("the tool failed and said nothing more")))
    }

    @Test func structuredContentAloneIsReadAsItsJSON() throws {
        let result = try JSON(parsing: #"{"structuredContent":{"sum":3}}"#)
        #expect(MCPToolOutput.decode(result) == .success(MCPToolOutput(text: #"{"sum":3}"#, structured: .object([("sum", .int(3))]))))
        #expect(MCPToolOutput.decode(.object([])) == .failure(.malformed("the tools/call result has no content")))
        #expect(MCPToolOutput.decode(try JSON(parsing: #"{"content":"x"}"#)) == .failure(.malformed("the content of the tools/call result is not an array")))
    }

    // MARK: Errors

    @Test func errorsTakeTheRealtimeAPIsThreeKinds() {
        #expect(MCPError.jsonRPC(code: -32601, message: "Method not found").json.description
            == #"{"type":"protocol_error","code":-32601,"message":"Method not found"}"#)
        #expect(MCPError.toolFailed("boom").json.description == #"{"type":"tool_execution_error","message":"boom"}"#)
        #expect(MCPError.status(401, "a bearer token is required").json.description
            == #"{"type":"http_error","code":401,"message":"the MCP server answered HTTP 401: a bearer token is required"}"#)
        #expect(MCPError.unreachable("connection refused").type == "protocol_error")
        #expect(MCPError.timedOut(operation: "tools/call", seconds: 60).json.description
            == #"{"type":"protocol_error","code":-32001,"message":"the MCP server did not answer tools/call within 60 s"}"#)
        #expect(MCPError.tooLarge(limit: 4).code == MCPError.connectionClosedCode)
        #expect(MCPError.notMCP("an HTML page").code == MCPError.parseErrorCode)
    }
}

extension Result where Failure == MCPError {
    var failureType: String? { if case .failure(let error) = self { error.type } else { nil } }
}
