/// The status line and headers of an upstream response.
public struct HTTPClientResponseHead: Sendable {
    public let status: Int
    public let headers: [(name: String, value: String)]

    public func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
}
