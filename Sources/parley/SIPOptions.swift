import ArgumentParser
import JSON
import Loop
import Session
import Telephony
import SessionEngine

/// Phone calls over SIP from a trunk or a PBX (docs/operations.md, "SIP").
struct SIPOptions: ParsableArguments {
    enum Settings {
        static let port = Setting<Int?>("--sip-port", "PARLEY_SIP_PORT", default: nil, shown: "off", valueName: "port",
                                        about: "The UDP port SIP listens on (5060 by convention); without it Parley takes no SIP calls") { text throws(SettingRejection) in
            try parseWholeNumber(text, in: 1...65_535)
        }
        static let tlsPort = Setting<Int?>("--sip-tls-port", "PARLEY_SIP_TLS_PORT", default: nil, shown: "the SIP port + 1 when --tls-cert is given, else off",
                                           valueName: "port", about: "The TCP port SIP over TLS listens on, with the server's certificate (--tls-cert, --tls-key)") { text throws(SettingRejection) in
            try parseWholeNumber(text, in: 1...65_535)
        }
        static let host = Setting<String>("--sip-host", "PARLEY_SIP_HOST", default: SIPEndpoint.Settings().host, shown: "0.0.0.0", valueName: "address",
                                          about: "The address SIP and its calls' RTP bind to") { text throws(SettingRejection) in
            guard (try? Sys.resolve(host: text, port: 0, passive: true, numericOnly: true))?.first != nil else { throw SettingRejection("is not a numeric IP address") }
            return text
        }
        static let publicAddress = Setting.text("--sip-public-ip", "PARLEY_SIP_PUBLIC_IP", shown: "the bound address, else 127.0.0.1", valueName: "address",
                                                about: "The IP address Contact, Via and the SDP answers name: the one callers reach (behind NAT, the public one)")
        static let rtpPorts = Setting<ClosedRange<Int>?>("--sip-rtp-ports", "PARLEY_SIP_RTP_PORTS", default: nil, shown: "any the kernel gives", valueName: "low-high",
                                                         about: "The UDP ports calls' RTP takes, one a call, for a firewall to open") { text throws(SettingRejection) in
            let bounds = text.split(separator: "-").map { Int($0) }
            guard bounds.count == 2, let low = bounds[0], let high = bounds[1], 1 <= low, low <= high, high <= 65_535 else {
                throw SettingRejection("is not a range of UDP ports such as 20000-29999")
            }
            return low...high
        }
        static let allow = Setting<[AddressRange]?>("--sip-allow", "PARLEY_SIP_ALLOW", default: nil, shown: "127.0.0.0/8 and ::1", valueName: "ranges",
                                                    about: "Where INVITEs may come from: comma-separated addresses or CIDR ranges of your trunk's or PBX's signalling (0.0.0.0/0 for any)") { text throws(SettingRejection) in
            var ranges: [AddressRange] = []
            for part in text.split(separator: ",") {
                guard let range = AddressRange(String(part.trimmingSpaces())) else { throw SettingRejection("holds '\(part)', which is not an address or CIDR range") }
                ranges.append(range)
            }
            return ranges
        }
        static let trunks = Setting.text("--sip-trunks-file", "PARLEY_SIP_TRUNKS_FILE", valueName: "file",
                                         about: "A file of 'username:password' lines: INVITEs must answer a digest challenge (RFC 8760, SHA-256 or MD5) with one of them")
        static let session = Setting.text("--sip-session", "PARLEY_SIP_SESSION", valueName: "file",
                                          about: "A JSON file holding a session object, as session.update sends it (instructions, voice, tools and MCP servers), that every SIP call starts with")
        static let webhook = Setting.text("--sip-webhook", "PARLEY_SIP_WEBHOOK", valueName: "url",
                                          about: "Where each incoming call's realtime.call.incoming webhook is posted; the application accepts or rejects it through /v1/realtime/calls/{call_id}/accept|reject (without it, calls are answered at once)")
        static let webhookAPI = Setting<SIPWebhook.API>.choice("--sip-webhook-api", "PARLEY_SIP_WEBHOOK_API", default: .realtime, shown: "realtime",
                                                              among: SIPWebhook.API.allCases.map { ($0.rawValue, $0) },
                                                              about: "Which API the webhook announces calls for: realtime (realtime.call.incoming, accepted through /v1/realtime/calls/{call_id}/accept) or live (GPT-Live's live.transport.incoming, accepted through /v1/live/sessions/{session_id}/accept)")
        static let webhookSecret = Setting.text("--sip-webhook-secret-file", "PARLEY_SIP_WEBHOOK_SECRET_FILE", valueName: "file",
                                                about: "A file holding the webhook's signing secret (whsec_…), as Standard Webhooks signs")
        static let routes = Setting.text("--sip-routes", "PARLEY_SIP_ROUTES", valueName: "file",
                                         about: "A JSON file of settings by number dialled and by trunk: {\"numbers\": {\"+15551234567\": {session object, \"greeting\": …}}, \"trunks\": {\"username\": {…}}}")
        static let greeting = Setting.text("--sip-greeting", "PARLEY_SIP_GREETING", shown: "none, the caller speaks first", valueName: "text",
                                           about: "Said when a SIP call is answered")
        static let mediaTimeout = Setting.number("--sip-media-timeout", "PARLEY_SIP_MEDIA_TIMEOUT", default: SIPEndpoint.Settings().mediaTimeoutSeconds,
                                                 in: Above(lower: 0, upper: 3600), about: "Seconds without RTP (not on hold) after which a call is ended with a BYE")
        static let maxInvites = Setting.whole("--sip-max-invites", "PARLEY_SIP_MAX_INVITES", default: SIPEndpoint.Settings().maxInvitesPerSecond, in: 1...100_000,
                                              about: "New calls (INVITEs) each loop begins a second; past it, 503 with Retry-After (measured: some 2,500 a second fit a core)")
        static let outboundTrunks = Setting<[String: SIPOutboundTrunk]>("--sip-trunk", "PARLEY_SIP_TRUNK", default: [:], shown: "none: no calls out",
                                                                       valueName: "name=uri,…",
                                                                       about: "Trunks calls are placed through (POST /v1/realtime/calls with {\"transport\": {\"type\": \"sip\", \"destination\", \"trunk\": name}}): name=sip:[caller@]host[:port][;transport=udp|tcp|tls], comma-separated; host an address or a name, resolved as the server starts") { text throws(SettingRejection) in
            var trunks: [String: SIPOutboundTrunk] = [:]
            for part in text.split(separator: ",") {
                let pair = part.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, let trunk = SIPOutboundTrunk(name: String(pair[0].trimmingSpaces()), uri: String(pair[1].trimmingSpaces())) else {
                    throw SettingRejection("holds '\(part)', which is not name=sip:[caller@]host[:port][;transport=udp|tcp|tls] with a host that resolves")
                }
                trunks[trunk.name] = trunk
            }
            return trunks
        }
        static let outboundTrunksFile = Setting.text("--sip-outbound-trunks", "PARLEY_SIP_OUTBOUND_TRUNKS", valueName: "file",
                                                     about: "A JSON file of trunks to call out through, by name: {\"acme\": {\"uri\": \"sip:[caller@]host[:port][;transport=udp|tcp|tls]\", \"username\", \"password\", \"register_seconds\", \"max_calls\", \"calls_per_second\", \"ca_file\", \"srtp\"}} (with --sip-trunk's)")
        static let trunkCredentials = Setting.text("--sip-trunk-credentials-file", "PARLEY_SIP_TRUNK_CREDENTIALS_FILE", valueName: "file",
                                                   about: "A file of 'trunk:username:password' lines: what calls placed through that trunk (--sip-trunk) answer its digest challenge with")
        static let srtp = Setting<SIPEndpoint.Settings.SRTPPolicy>.choice("--sip-srtp", "PARLEY_SIP_SRTP", default: .optional, shown: "optional",
                                                                          among: SIPEndpoint.Settings.SRTPPolicy.allCases.map { ($0.rawValue, $0) },
                                                                          about: "SRTP (SDES keys in the SDP, RFC 4568) on calls signalled over TLS: optional (taken when offered; plain RTP otherwise) or required (plain offers refused with 488, calls out over TLS offer SRTP)")
        static let maxCalls = Setting.whole("--sip-max-calls", "PARLEY_SIP_MAX_CALLS", default: SIPEndpoint.Settings().maxCallsPerLoop, in: 1...1_000_000,
                                            about: "Calls each loop holds at once; past it, 503 with Retry-After")
    }

    @Option(Settings.port) var port: String?
    @Option(Settings.host) var host: String?
    @Option(Settings.tlsPort) var tlsPort: String?
    @Option(Settings.publicAddress) var publicAddress: String?
    @Option(Settings.rtpPorts) var rtpPorts: String?
    @Option(Settings.allow) var allow: String?
    @Option(Settings.trunks) var trunks: String?
    @Option(Settings.session) var session: String?
    @Option(Settings.greeting) var greeting: String?
    @Option(Settings.routes) var routes: String?
    @Option(Settings.webhook) var webhook: String?
    @Option(Settings.webhookSecret) var webhookSecret: String?
    @Option(Settings.webhookAPI) var webhookAPI: String?
    @Option(Settings.mediaTimeout) var mediaTimeout: String?
    @Option(Settings.maxInvites) var maxInvites: String?
    @Option(Settings.maxCalls) var maxCalls: String?
    @Option(Settings.srtp) var srtp: String?
    @Option(Settings.outboundTrunks) var outboundTrunks: String?
    @Option(Settings.outboundTrunksFile) var outboundTrunksFile: String?
    @Option(Settings.trunkCredentials) var trunkCredentials: String?

    /// `--sip-routes`: each number's and trunk's session object, with its greeting.
    static func routes(_ file: String) throws -> SIPRoutes {
        guard let bytes = Sys.readFile(file) else { throw SettingError.unreadable("--sip-routes", file) }
        let json: JSON
        do { json = try JSON(parsing: String(decoding: bytes, as: UTF8.self)) } catch { throw Settings.routes.refuse(file, "is not JSON: \(error)") }
        var routes = SIPRoutes()
        for (group, into) in [("numbers", \SIPRoutes.numbers), ("trunks", \SIPRoutes.trunks)] as [(String, WritableKeyPath<SIPRoutes, [String: SIPRoutes.Route]>)] {
            for (key, value) in json[group]?.object ?? [] {
                do {
                    routes[keyPath: into][key] = SIPRoutes.Route(session: try SessionUpdate.parse(session: value), greeting: value["greeting"]?.string)
                } catch {
                    throw Settings.routes.refuse(file, "has a \(group) entry '\(key)' that is not a usable session: \(error.message)")
                }
            }
        }
        return routes
    }

    /// Nil when SIP is off (no `--sip-port`). `certificate`: the server's TLS files, if it has them.
    func settings(certificate: (String, String)?) throws -> SIPEndpoint.Settings? {
        guard let port = try Settings.port.read(port) else { return nil }
        var settings = SIPEndpoint.Settings()
        settings.port = port
        let secure = try Settings.tlsPort.read(tlsPort)
        if let secure, certificate == nil { throw Settings.tlsPort.refuse(String(secure), "needs the server's certificate (--tls-cert and --tls-key)") }
        if let (cert, key) = certificate { settings.tls = (secure ?? min(port + 1, 65_535), cert, key) }
        settings.host = try Settings.host.read(host)
        settings.publicAddress = try Settings.publicAddress.read(publicAddress)
        settings.rtpPorts = try Settings.rtpPorts.read(rtpPorts)
        if let ranges = try Settings.allow.read(allow) { settings.allowedSources = ranges }
        if let file = try Settings.trunks.read(trunks) {
            guard let bytes = Sys.readFile(file) else { throw SettingError.unreadable("--sip-trunks-file", file) }
            var table: [String: String] = [:]
            for line in String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { throw Settings.trunks.refuse(file, "holds a line that is not username:password") }
                table[String(parts[0].trimmingSpaces())] = String(parts[1].trimmingSpaces())
            }
            settings.trunks = table
        }
        if let file = try Settings.session.read(session) { settings.session = try TelephonyOptions.sessionFile(file, Settings.session) }
        settings.greeting = try Settings.greeting.read(greeting)
        if let file = try Settings.routes.read(routes) { settings.routes = try Self.routes(file) }
        if let url = try Settings.webhook.read(webhook) {
            guard let file = try Settings.webhookSecret.read(webhookSecret) else { throw Settings.webhookSecret.refuse("", "is needed with --sip-webhook: webhooks are signed") }
            guard let bytes = Sys.readFile(file) else { throw SettingError.unreadable("--sip-webhook-secret-file", file) }
            let secret = String(String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).first ?? "")
            settings.webhook = (url, secret)
        }
        settings.webhookAPI = try Settings.webhookAPI.read(webhookAPI)
        settings.mediaTimeoutSeconds = try Settings.mediaTimeout.read(mediaTimeout)
        settings.maxInvitesPerSecond = try Settings.maxInvites.read(maxInvites)
        settings.maxCallsPerLoop = try Settings.maxCalls.read(maxCalls)
        settings.srtp = try Settings.srtp.read(srtp)
        settings.outboundTrunks = try Settings.outboundTrunks.read(outboundTrunks)
        if let file = try Settings.outboundTrunksFile.read(outboundTrunksFile) {
            guard let bytes = Sys.readFile(file) else { throw SettingError.unreadable("--sip-outbound-trunks", file) }
            do throws(SIPOutboundTrunk.FileError) {
                for (name, trunk) in try SIPOutboundTrunk.parse(file: String(decoding: bytes, as: UTF8.self)) {
                    guard settings.outboundTrunks[name] == nil else { throw .invalid("trunk '\(name)' is given by --sip-trunk too") }
                    settings.outboundTrunks[name] = trunk
                }
            } catch {
                throw Settings.outboundTrunksFile.refuse(file, error.description)
            }
        }
        if let file = try Settings.trunkCredentials.read(trunkCredentials) {
            guard let bytes = Sys.readFile(file) else { throw SettingError.unreadable("--sip-trunk-credentials-file", file) }
            for line in String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
                let parts = line.split(separator: ":", maxSplits: 2).map { String($0.trimmingSpaces()) }
                guard parts.count == 3, !parts.contains(where: \.isEmpty) else { throw Settings.trunkCredentials.refuse(file, "holds a line that is not trunk:username:password") }
                guard settings.outboundTrunks[parts[0]] != nil else { throw Settings.trunkCredentials.refuse(file, "names a trunk '\(parts[0])' that --sip-trunk does not") }
                settings.outboundTrunks[parts[0]]?.credentials = (parts[1], parts[2])
            }
        }
        return settings
    }
}
