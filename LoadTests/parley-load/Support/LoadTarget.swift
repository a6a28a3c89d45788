#if canImport(Glibc)
import Glibc
#endif
import Loop
import TLS

/// Where the load goes: a `ws://` or `wss://` URL on a loopback address. Anything else is refused,
/// because a load generator that can open 20,000 sockets must not be pointed at someone else's machine.
struct LoadTarget: CustomStringConvertible {
    let url: String
    /// For wss://: the client TLS context, which verifies the server against the system store and
    /// the `--ca` file.
    let tls: TLSContext?
    /// As written in the URL, for the Host header and for messages.
    let hostText: String
    let port: UInt16
    let path: String
    let address: SocketAddress

    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    var description: String { url }
    var hostHeader: String { "\(hostText):\(port)" }
    /// The name the server's certificate must carry (the host without IPv6 brackets).
    var serverName: String { hostText.hasPrefix("[") ? String(hostText.dropFirst().dropLast()) : hostText }

    /// `caFile`: PEM CA certificates to trust for wss:// besides the system store (for a test CA).
    init(_ url: String, caFile: String? = nil) throws(Invalid) {
        self.url = url
        let secure = url.hasPrefix("wss://")
        guard secure || url.hasPrefix("ws://") else {
            throw Invalid(description: "\(url): expected a ws:// or wss:// URL such as ws://127.0.0.1:8080/echo")
        }
        do {
            tls = secure ? try TLSContext.client(caFile: caFile) : nil
        } catch {
            throw Invalid(description: "\(url): \(error)")
        }
        let rest = url.dropFirst(secure ? "wss://".count : "ws://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        let tail = rest.dropFirst(authority.count)
        path = tail.isEmpty ? "/" : (tail.first == "?" ? "/" + tail : String(tail))

        var host = Substring(authority)
        var portText: Substring = secure ? "443" : "80"
        if host.first == "[" {
            // [::1]:8080
            guard let close = host.firstIndex(of: "]") else { throw Invalid(description: "\(url): unterminated [IPv6] host") }
            let after = host[host.index(after: close)...]
            if after.first == ":" { portText = after.dropFirst() } else if !after.isEmpty {
                throw Invalid(description: "\(url): expected :port after ]")
            }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard let port = UInt16(portText), port > 0 else { throw Invalid(description: "\(url): bad port \"\(portText)\"") }
        self.port = port
        hostText = host.contains(":") ? "[\(host)]" : String(host)
        guard let address = Self.loopbackAddress(String(host), port: port) else {
            throw Invalid(description: "refusing \(url): parley-load only connects to loopback addresses (127.0.0.0/8, localhost, ::1), so it cannot be pointed at another machine")
        }
        self.address = address
    }

    private static func loopbackAddress(_ host: String, port: UInt16) -> SocketAddress? {
        if host.lowercased() == "localhost" { return .ipv4(127, 0, 0, 1, port: port) }
        if host == "::1" { return .ipv6Loopback(port: port) }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false).map { UInt8($0) }
        guard octets.count == 4, let a = octets[0], let b = octets[1], let c = octets[2], let d = octets[3], a == 127 else {
            return nil
        }
        return .ipv4(a, b, c, d, port: port)
    }

    /// The local address connection `index` binds to before connecting: 127.0.0.(2 + index % sources).
    /// Each source address has its own ~28,000 ephemeral ports towards one server port, so 16
    /// sources leave room for far more connections than one address could make. IPv6 has one
    /// loopback address only, so it gets no source binding.
    func sourceAddress(index: Int, sources: Int) -> SocketAddress? {
        guard !address.isIPv6, sources > 0 else { return nil }
        return .ipv4(127, 0, 0, UInt8(2 + index % sources), port: 0)
    }
}
