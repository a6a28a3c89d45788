import JSON
import Loop
import Media
import SIP

/// A trunk calls go out through: its host (a name or a numeric address) and the address it was
/// resolved to as the server started, its transport, the caller id its
/// From gives, the credentials its digest challenges are answered with, whether Parley registers
/// with it (RFC 3261 section 10), and its limits. Given on the command line
/// (`--sip-trunk NAME=sip:[caller@]HOST[:PORT][;transport=tcp|tls]`) or in the trunks file
/// (`--sip-outbound-trunks`, `parse(file:)`).
public struct SIPOutboundTrunk: Sendable, Equatable {
    public enum Transport: String, Sendable, CaseIterable {
        case udp = "UDP", tcp = "TCP", tls = "TLS"
    }

    public var name: String
    /// As given: the Request-URI's host, and the name a TLS trunk's certificate is checked for.
    public var host: String
    public var port: UInt16
    /// Where its signalling goes: `host` resolved once, as the server started (its DNS records are
    /// not followed after; no SRV or NAPTR lookup, RFC 3263: the port is the URI's or the default).
    package var address: TransportAddress
    public var transport = Transport.udp
    /// The From's user (the number calls show), `parley` when the URI gives none.
    public var caller: String
    /// What Parley answers the trunk's digest challenge with (`--sip-trunk-credentials-file`, or
    /// the file's `username` and `password`); never printed.
    public var credentials: (username: String, password: String)?
    /// REGISTER with the trunk for this long (seconds asked; the trunk's grant is refreshed at half
    /// of it), for providers that send calls to a registered contact and check it on calls out.
    public var registerSeconds: Int?
    /// Calls it carries at once, and call attempts a second (`SIPTrunkLimiter`); nil: no limit.
    public var maxCalls: Int?
    public var callsPerSecond: Double?
    /// PEM CA certificates a TLS trunk's certificate is verified against, beside the system's.
    public var caFile: String?
    /// Media as SRTP (SDES, RFC 4568), on a TLS trunk: the offer is RTP/SAVP with Parley's key,
    /// and an answer without one is not taken.
    public var srtp = false

    public static func == (a: SIPOutboundTrunk, b: SIPOutboundTrunk) -> Bool {
        a.name == b.name && a.host == b.host && a.port == b.port && a.address == b.address && a.transport == b.transport && a.caller == b.caller
            && a.credentials?.username == b.credentials?.username && a.credentials?.password == b.credentials?.password
            && a.registerSeconds == b.registerSeconds && a.maxCalls == b.maxCalls && a.callsPerSecond == b.callsPerSecond && a.caFile == b.caFile && a.srtp == b.srtp
    }

    /// `sip:[caller@]host[:port][;transport=udp|tcp|tls]`; nil when it is not that, or `resolve`
    /// finds no address for its host. TLS's port is 5061 unless given (RFC 3261 section 19.1.2).
    /// `resolve`: the host's address (by default getaddrinfo, which blocks: at start-up only).
    package init?(name: String, uri text: String, resolve: (String, UInt16) -> TransportAddress? = SIPOutboundTrunk.resolve) {
        guard !name.isEmpty, let uri = SIPURI(text), text.hasPrefix("sip:") else { return nil }
        var transport = Transport.udp
        if let given = uri.parameters.first(where: { $0.name.lowercased() == "transport" })?.value?.uppercased() {
            guard let known = Transport(rawValue: given) else { return nil }
            transport = known
        }
        let port = uri.port ?? (transport == .tls ? 5061 : 5060)
        guard let address = resolve(uri.host, port) else { return nil }
        self.name = name
        host = uri.host
        self.port = port
        self.address = address
        self.transport = transport
        caller = uri.user ?? "parley"
    }

    /// A host's first address (a name looked up, a numeric address read), for its port.
    package static func resolve(_ host: String, _ port: UInt16) -> TransportAddress? {
        (try? Sys.resolve(host: host, port: Int(port), passive: false, numericOnly: false))?.first.flatMap(TransportAddress.init)
    }

    /// A numeric address only, never a lookup (for tests and fuzzing).
    package static func numeric(_ host: String, _ port: UInt16) -> TransportAddress? {
        (try? Sys.resolve(host: host, port: Int(port), passive: false, numericOnly: true))?.first.flatMap(TransportAddress.init)
    }

    public enum FileError: Error, CustomStringConvertible {
        case invalid(String)
        public var description: String { switch self { case .invalid(let why): why } }
    }

    /// The trunks file: `{"NAME": {"uri": "sip:…", "username", "password", "register_seconds",
    /// "max_calls", "calls_per_second", "ca_file", "srtp"}, …}` (docs/operations.md, "Calls out").
    package static func parse(file text: String, resolve: (String, UInt16) -> TransportAddress? = SIPOutboundTrunk.resolve) throws(FileError) -> [String: SIPOutboundTrunk] {
        guard let json = try? JSON(parsing: text), let entries = json.object else { throw .invalid("is not a JSON object of trunks by name") }
        var trunks: [String: SIPOutboundTrunk] = [:]
        for (name, entry) in entries {
            func invalid(_ why: String) -> FileError { .invalid("trunk '\(name)': \(why)") }
            guard let fields = entry.object else { throw invalid("is not an object") }
            let known: Set = ["uri", "username", "password", "register_seconds", "max_calls", "calls_per_second", "ca_file", "srtp"]
            if let unknown = fields.first(where: { !known.contains($0.0) }) { throw invalid("has '\(unknown.0)', which a trunk does not take") }
            guard let uri = entry["uri"]?.string, var trunk = SIPOutboundTrunk(name: name, uri: uri, resolve: resolve) else {
                throw invalid("needs 'uri': sip:[caller@]host[:port][;transport=udp|tcp|tls], its host an address or a name that resolves")
            }
            switch (entry["username"]?.string, entry["password"]?.string) {
            case (nil, nil): break
            case (let username?, let password?) where !username.isEmpty && !password.isEmpty: trunk.credentials = (username, password)
            default: throw invalid("'username' and 'password' go together")
            }
            if let seconds = entry["register_seconds"] {
                guard let value = seconds.double, value == value.rounded(), (60...86_400).contains(value) else { throw invalid("'register_seconds' must be 60 to 86,400") }
                trunk.registerSeconds = Int(value)
            }
            if let calls = entry["max_calls"] {
                guard let value = calls.double, value == value.rounded(), (1...100_000).contains(value) else { throw invalid("'max_calls' must be 1 to 100,000") }
                trunk.maxCalls = Int(value)
            }
            if let rate = entry["calls_per_second"] {
                guard let value = rate.double, value > 0, value <= 10_000 else { throw invalid("'calls_per_second' must be above 0 and at most 10,000") }
                trunk.callsPerSecond = value
            }
            if let file = entry["ca_file"] {
                guard let path = file.string, !path.isEmpty, trunk.transport == .tls else { throw invalid("'ca_file' is a file's path, for a trunk over TLS") }
                trunk.caFile = path
            }
            if let srtp = entry["srtp"] {
                guard let on = srtp.bool, !on || trunk.transport == .tls else { throw invalid("'srtp' is true or false, and true only over TLS (the keys travel in the SDP)") }
                trunk.srtp = on
            }
            trunks[name] = trunk
        }
        return trunks
    }
}
