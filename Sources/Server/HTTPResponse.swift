/// HTTP status codes Parley answers with.
public struct HTTPStatus: Error, Hashable, Sendable {
    public let code: Int
    public let reason: String

    public init(code: Int, reason: String) {
        self.code = code
        self.reason = reason
    }

    public static let ok = HTTPStatus(code: 200, reason: "OK")
    public static let created = HTTPStatus(code: 201, reason: "Created")
    public static let noContent = HTTPStatus(code: 204, reason: "No Content")
    public static let switchingProtocols = HTTPStatus(code: 101, reason: "Switching Protocols")
    public static let badRequest = HTTPStatus(code: 400, reason: "Bad Request")
    public static let unauthorized = HTTPStatus(code: 401, reason: "Unauthorized")
    public static let forbidden = HTTPStatus(code: 403, reason: "Forbidden")
    public static let notFound = HTTPStatus(code: 404, reason: "Not Found")
    public static let methodNotAllowed = HTTPStatus(code: 405, reason: "Method Not Allowed")
    public static let lengthRequired = HTTPStatus(code: 411, reason: "Length Required")
    public static let unsupportedMediaType = HTTPStatus(code: 415, reason: "Unsupported Media Type")
    public static let contentTooLarge = HTTPStatus(code: 413, reason: "Content Too Large")
    public static let tooManyRequests = HTTPStatus(code: 429, reason: "Too Many Requests")
    public static let internalServerError = HTTPStatus(code: 500, reason: "Internal Server Error")
    public static let badGateway = HTTPStatus(code: 502, reason: "Bad Gateway")
    public static let uriTooLong = HTTPStatus(code: 414, reason: "URI Too Long")
    public static let upgradeRequired = HTTPStatus(code: 426, reason: "Upgrade Required")
    public static let headersTooLarge = HTTPStatus(code: 431, reason: "Request Header Fields Too Large")
    public static let serviceUnavailable = HTTPStatus(code: 503, reason: "Service Unavailable")
    public static let httpVersionNotSupported = HTTPStatus(code: 505, reason: "HTTP Version Not Supported")
}

/// A complete response, serialised in one piece: Parley's HTTP responses are small.
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: HTTPStatus, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: HTTPStatus, contentType: String, body: String) {
        self.init(status: status, headers: [("Content-Type", contentType)], body: Array(body.utf8))
    }

    /// A plain-text error response whose body repeats the status line.
    /// A refusal as the OpenAI API words one: `{"error": {"type", "code", "message"}}`.
    public static func jsonError(_ status: HTTPStatus, code: String, message: String, headers: [(String, String)] = []) -> HTTPResponse {
        func quoted(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case _ where scalar.value < 0x20: out += " "
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        let type = status.code == 429 ? "rate_limit_error" : "invalid_request_error"
        var response = HTTPResponse(status: status, contentType: "application/json",
                                    body: #"{"error":{"type":\#(quoted(type)),"code":\#(quoted(code)),"message":\#(quoted(message))}}"# + "\n")
        response.headers += headers
        return response
    }

    static func error(_ status: HTTPStatus, headers: [(String, String)] = []) -> HTTPResponse {
        var response = HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: "\(status.code) \(status.reason)\n")
        response.headers += headers
        return response
    }

    /// The wire form. `keepAlive` decides the `Connection` header; 101 responses carry no length.
    /// A response to HEAD keeps the body's length but not the body.
    func serialized(keepAlive: Bool, includeBody: Bool = true) -> [UInt8] {
        var head = "HTTP/1.1 \(status.code) \(status.reason)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if status.code != 101 {
            head += "Content-Length: \(body.count)\r\n"
            head += keepAlive ? "" : "Connection: close\r\n"
        }
        head += "\r\n"
        return Array(head.utf8) + (includeBody ? body : [])
    }
}

/// An upgrade refused by an endpoint's negotiation: the response the client gets.
public struct HTTPRefusal: Error, Sendable {
    public let response: HTTPResponse
    public init(_ response: HTTPResponse) { self.response = response }
    public init(_ status: HTTPStatus) { response = .error(status) }
}
