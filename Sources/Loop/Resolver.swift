import Glibc

/// Host names to addresses without holding up a loop. getaddrinfo blocks its caller while DNS
/// answers, which can be seconds when a DNS server is slow or away: on a loop that would stall every
/// session it serves. A name goes to a small pool of threads of its own and its addresses come back
/// on the loop that asked; an address literal is answered at once, with no thread involved.
///
/// Names are looked up afresh each time they are asked for (no cache): a Kubernetes Service's
/// address can change, and the callers (a store's reconnect) ask seldom.
public final class Resolver: Sendable {
    public typealias Lookup = @Sendable (_ host: String, _ port: Int) throws(SystemError) -> [SocketAddress]

    private let lookup: Lookup
    private let pool: WorkerPool

    /// The process's resolver (getaddrinfo on two threads), made on first use: a server that never
    /// resolves a name at run time never starts its threads.
    public static let system: Resolver = {
        do {
            return try Resolver()
        } catch {
            fatalError("cannot start the resolver's threads: \(error)")
        }
    }()

    /// `lookup` is getaddrinfo unless a test holds or scripts the answer.
    public init(threads: Int = 2, queueLimit: Int = 1024,
                lookup: @escaping Lookup = { host, port throws(SystemError) in try Sys.resolve(host: host, port: port) }) throws(SystemError) {
        self.lookup = lookup
        pool = try WorkerPool(name: "parley-resolve", threads: threads, queueLimit: queueLimit)
    }

    /// The addresses of `host` at `port`, to `done` on `loop`: at once for a literal, after the
    /// lookup for a name. A full queue is an error like a failed lookup.
    public func resolve(host: String, port: Int, on loop: EventLoop, _ done: @escaping (Result<[SocketAddress], SystemError>) -> Void) {
        if let literal = try? Sys.resolve(host: host, port: port, numericOnly: true), !literal.isEmpty {
            return done(.success(literal))
        }
        let lookup = lookup
        let ticket = loop.offload(to: pool, { () -> Result<[SocketAddress], SystemError> in
            do throws(SystemError) {
                return .success(try lookup(host, port))
            } catch {
                return .failure(error)
            }
        }, then: done)
        if ticket == nil { done(.failure(SystemError("resolve \(host): the resolver's queue is full", errno: EAGAIN))) }
    }
}
