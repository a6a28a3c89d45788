import Loop
import Metrics

/// Maps paths to plain HTTP handlers and WebSocket endpoints. Built before the server starts and
/// read-only afterwards, so every loop can share it.
public final class Router: Sendable {
    public typealias HTTPHandler = @Sendable (HTTPRequest) -> HTTPResponse
    /// Answers over time on the request's loop: start, write chunks, end (see `HTTPResponseStream`).
    public typealias StreamingHandler = @Sendable (HTTPRequest, HTTPResponseStream) -> Void
    /// Makes the handler for one upgraded connection, on its loop.
    public typealias WebSocketFactory = @Sendable (HTTPRequest, _ subprotocol: String?) -> any WebSocketHandler
    /// Chooses a subprotocol among those offered, or refuses the upgrade with a response (401 for
    /// a missing key, say).
    public typealias Negotiate = @Sendable (HTTPRequest, _ offered: [String]) -> Result<String?, HTTPRefusal>
    /// Negotiation and the handler in one step, for endpoints whose handler needs what admitting
    /// the upgrade found (who the caller is, say): the subprotocol and handler, or the refusal.
    public typealias Admit = @Sendable (HTTPRequest, _ offered: [String]) -> Result<WebSocketAdmission, HTTPRefusal>
    /// Why this node should take no new sessions now, or nil: read at every `/readyz`.
    public typealias ReadinessCheck = @Sendable () -> String?

    struct WebSocketEndpoint: Sendable {
        let name: String
        let admit: Admit
        /// Index into the per-endpoint metrics; 0 is plain HTTP.
        let metricsIndex: Int
    }

    enum Responder {
        case complete(HTTPHandler)
        case streaming(StreamingHandler)
    }

    enum Route {
        /// Responders by method; HEAD is served by GET's responder, without the body.
        case http([String: Responder])
        /// A WebSocket endpoint, and responders for requests to its path that are not upgrades
        /// (`POST /v1/realtime` with an SDP offer, the Realtime API's older WebRTC signalling).
        case webSocket(WebSocketEndpoint, http: [String: Responder])
    }

    private let routes: [String: Route]
    private let prefixes: [(prefix: String, route: Route)]
    /// Metric label per endpoint index: "http", then each WebSocket endpoint.
    let endpointNames: [String]
    let metricsRegistries: [MetricsRegistry]
    /// Reasons `/readyz` answers 503 for, beside the drain.
    let readinessChecks: [ReadinessCheck]

    public struct Builder {
        var routes: [String: Route] = [:]
        /// Routes for every path under a prefix (`/v1/sessions/`), tried after the exact ones.
        var prefixes: [(prefix: String, route: Route)] = []
        var endpointNames = ["http"]
        var metricsRegistries: [MetricsRegistry] = []
        var readinessChecks: [ReadinessCheck] = []

        /// Adds a registry's series to /metrics (the server's own registry includes it).
        public mutating func addMetrics(_ registry: MetricsRegistry) {
            metricsRegistries.append(registry)
        }

        public init() {}

        /// A reason for `/readyz` to answer 503 while `check` gives one (a busy speech helper),
        /// beside the drain: balancers then send new sessions to another node, and the sessions
        /// held here go on (the server itself refuses nothing for it).
        public mutating func notReady(when check: @escaping ReadinessCheck) {
            readinessChecks.append(check)
        }

        public mutating func get(_ path: String, _ handler: @escaping HTTPHandler) {
            add(path, "GET", .complete(handler))
        }

        public mutating func post(_ path: String, _ handler: @escaping HTTPHandler) {
            add(path, "POST", .complete(handler))
        }

        /// A route whose response is streamed (e.g. server-sent events).
        public mutating func stream(_ method: String, _ path: String, _ handler: @escaping StreamingHandler) {
            add(path, method, .streaming(handler))
        }

        private mutating func add(_ path: String, _ method: String, _ responder: Responder) {
            switch routes[path] {
            case .webSocket(let endpoint, var methods):
                methods[method] = responder
                routes[path] = .webSocket(endpoint, http: methods)
            case .http(var methods):
                methods[method] = responder
                routes[path] = .http(methods)
            case nil:
                routes[path] = .http([method: responder])
            }
        }

        /// A streamed `method` (GET unless given) for every path that starts with `prefix` (a
        /// resource by id: the handler reads the rest of the path).
        public mutating func streamUnder(_ prefix: String, method: String = "GET", _ handler: @escaping StreamingHandler) {
            guard let index = prefixes.firstIndex(where: { $0.prefix == prefix }) else {
                return prefixes.append((prefix, .http([method: .streaming(handler)])))
            }
            switch prefixes[index].route {
            case .http(var methods):
                methods[method] = .streaming(handler)
                prefixes[index].route = .http(methods)
            case .webSocket(let endpoint, var methods):
                methods[method] = .streaming(handler)
                prefixes[index].route = .webSocket(endpoint, http: methods)
            }
        }

        /// A WebSocket endpoint for every path under `prefix` (a resource by id: `admit` reads the
        /// rest of the path); requests there that are not upgrades go to `streamUnder`'s handlers.
        public mutating func webSocketUnder(_ prefix: String, name: String, admit: @escaping Admit) {
            let endpoint = WebSocketEndpoint(name: name, admit: admit, metricsIndex: endpointNames.count)
            endpointNames.append(name)
            if let index = prefixes.firstIndex(where: { $0.prefix == prefix }), case .http(let methods) = prefixes[index].route {
                prefixes[index].route = .webSocket(endpoint, http: methods)
            } else {
                prefixes.append((prefix, .webSocket(endpoint, http: [:])))
            }
        }

        /// A WebSocket endpoint; `name` labels its metrics. `negotiate` picks a subprotocol.
        public mutating func webSocket(_ path: String, name: String, negotiate: Negotiate? = nil, _ factory: @escaping WebSocketFactory) {
            webSocket(path, name: name, admit: Router.admission(negotiate: negotiate, factory))
        }

        /// A WebSocket endpoint whose `admit` makes the handler as it accepts the upgrade.
        public mutating func webSocket(_ path: String, name: String, admit: @escaping Admit) {
            var methods: [String: Responder] = [:]
            if case .http(let existing) = routes[path] { methods = existing }
            routes[path] = .webSocket(WebSocketEndpoint(name: name, admit: admit, metricsIndex: endpointNames.count), http: methods)
            endpointNames.append(name)
        }
    }

    public init(_ builder: Builder) {
        routes = builder.routes
        prefixes = builder.prefixes
        endpointNames = builder.endpointNames
        metricsRegistries = builder.metricsRegistries
        readinessChecks = builder.readinessChecks
    }

    func route(_ path: Substring) -> Route? {
        routes[String(path)] ?? prefixes.first { path.hasPrefix($0.prefix) && path.count > $0.prefix.count }?.route
    }

    /// Negotiation, then the factory: what an endpoint without its own `Admit` does.
    static func admission(negotiate: Negotiate?, _ factory: @escaping WebSocketFactory) -> Admit {
        { request, offered in
            let chosen = negotiate.map { $0(request, offered) } ?? .success(nil)
            return chosen.map { WebSocketAdmission(subprotocol: $0, handler: factory(request, $0)) }
        }
    }
}

/// An accepted upgrade: the subprotocol to answer with, and the connection's handler.
public struct WebSocketAdmission {
    public let subprotocol: String?
    public let handler: any WebSocketHandler
    /// A last check that answers later (a tenant's count on another machine): the 101 waits for
    /// it, the connection reading nothing meanwhile, and a refusal it gives is the upgrade's answer.
    public let confirm: Confirm?
    /// The largest message this connection takes, when its protocol needs more than the server's
    /// `maxMessageBytes` (GPT-Live's 30 s audio fixture is 1.9 MB of base64); nil: the server's.
    public let maxMessageBytes: Int?

    /// Called on the connection's loop; `done` is called on that loop, once, with nil to upgrade.
    public typealias Confirm = (EventLoop, _ done: @escaping (HTTPRefusal?) -> Void) -> Void

    public init(subprotocol: String?, handler: any WebSocketHandler, confirm: Confirm? = nil, maxMessageBytes: Int? = nil) {
        self.subprotocol = subprotocol
        self.handler = handler
        self.confirm = confirm
        self.maxMessageBytes = maxMessageBytes
    }
}
