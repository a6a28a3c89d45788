/// One request for an upstream: method, URL, headers, body and its time-outs.
public struct HTTPClientRequest: Sendable {
    public struct Timeouts: Sendable {
        public var connect: Double = 5
        /// From the request's last byte sent to the response head.
        public var firstByte: Double = 60
        /// Longest silence while the body streams.
        public var idle: Double = 60
        public init() {}
    }

    public var method: String
    public var url: UpstreamURL
    public var headers: [(String, String)]
    public var body: [UInt8]
    public var timeouts = Timeouts()

    public init(method: String, url: UpstreamURL, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    func serialized() -> [UInt8] {
        var head = "\(method) \(url.path) HTTP/1.1\r\nHost: \(url.hostHeader)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + body
    }
}
