import JSON
import Loop
import TLS

/// Server side of the opening handshake (RFC 6455 section 4.2). Pure: a request in, a verdict out.
public enum WebSocketHandshake {
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    enum Verdict {
        /// Upgrade with this 101 response, to the admission's handler.
        case accept(HTTPResponse, WebSocketAdmission)
        /// Refuse with this response.
        case refuse(HTTPResponse)
    }

    /// Checks the request, then `admit` (which chooses from the subprotocols the client offered,
    /// in its order, and may refuse, e.g. 401 on bad credentials) as the last step.
    static func evaluate(_ request: HTTPRequest, admit: Router.Admit) -> Verdict {
        guard request.method == "GET" else {
            return .refuse(.error(.methodNotAllowed, headers: [("Allow", "GET")]))
        }
        // A plain request to a WebSocket endpoint is told what it must do.
        guard request.tokens("upgrade").contains("websocket") else {
            return .refuse(.error(.upgradeRequired, headers: [("Upgrade", "websocket"), ("Connection", "Upgrade")]))
        }
        guard request.minorVersion >= 1, request.tokens("connection").contains("upgrade") else {
            return .refuse(.error(.badRequest))
        }
        guard request.header("sec-websocket-version")?.trimmingSpacesString == "13" else {
            return .refuse(.error(.upgradeRequired, headers: [("Sec-WebSocket-Version", "13")]))
        }
        guard let key = request.header("sec-websocket-key")?.trimmingSpacesString,
              Base64.decode(Array(key.utf8))?.count == 16 else {
            return .refuse(.error(.badRequest))
        }
        let offered = request.tokens("sec-websocket-protocol").map(String.init)
        // Tokens are compared lowercased; answer with the client's own spelling.
        let original = request.headers.filter { $0.name.lowercased() == "sec-websocket-protocol" }
            .flatMap { $0.value.split(separator: ",").map { String(Substring($0).trimmingSpaces()) } }
        let admission: WebSocketAdmission
        switch admit(request, original.isEmpty ? offered : original) {
        case .success(let admitted): admission = admitted
        case .failure(let refusal): return .refuse(refusal.response)
        }
        var headers = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", acceptKey(for: key))]
        if let subprotocol = admission.subprotocol { headers.append(("Sec-WebSocket-Protocol", subprotocol)) }
        return .accept(HTTPResponse(status: .switchingProtocols, headers: headers), admission)
    }

    /// base64(SHA-1(key + GUID)), RFC 6455 section 4.2.2 step 5.4. Clients check it too.
    public static func acceptKey(for key: String) -> String {
        Base64.encode(SHA1.digest(Array((key + guid).utf8)))
    }
}

extension String {
    var trimmingSpacesString: String { String(Substring(self).trimmingSpaces()) }
}
