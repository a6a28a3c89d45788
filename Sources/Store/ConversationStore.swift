import Loop
import Metrics

/// Where conversations outlive their process: every item the client is told is done, the session's
/// settings, and the hash of its current resume token. The session layer writes through this on
/// its loop; `Store` implements it on SQLite (one node) and Redis (many nodes).
///
/// Writes are not waited for, with one exception: a completed item's `kept` says when the store
/// holds it, and the session tells its client the item is done only then (an embedded store
/// commits before it returns; a remote one answers a round trip later, or when it is back from an
/// outage). A store that cannot write says so in its metrics and log; the session goes on without it.
public protocol ConversationStore: AnyObject, Sendable {
    /// Names the store in logs and metrics: "sqlite", "redis".
    var kind: String { get }
    /// Called on each loop as it starts: a remote store connects, so that an outage is known
    /// before the first session asks.
    func prepare(on loop: EventLoop)
    /// A session that asked for resume began (or was resumed here from another process).
    func sessionStarted(_ session: StoredSession, on loop: EventLoop)
    /// The session's settings changed (`session.update`): the `session` object as the client sees it.
    func settingsChanged(sessionID: String, settings: String, on loop: EventLoop)
    /// An item is complete: `item` is its JSON as `conversation.item.done` shows it, `event` the
    /// whole event that says so (replayed to a client that resumes after missing it), `seq` that
    /// event's sequence number. `kept` runs on `loop` once, when the store holds the item (true) or
    /// will not (false: refused, or dropped past what an outage may hold).
    func itemCompleted(sessionID: String, seq: Int, itemID: String, item: String, event: String, on loop: EventLoop,
                       _ kept: @escaping (Bool) -> Void)
    /// A completed item changed after it was done (a spoken reply truncated to what was heard):
    /// its JSON is replaced; its seq and the event that said it was done stay. `kept` as above.
    func itemChanged(sessionID: String, itemID: String, item: String, on loop: EventLoop, _ kept: @escaping (Bool) -> Void)
    /// The session's resume token changes from the one hashing to `previous` to the one hashing to
    /// `tokenHash` (each resume uses one up and gives the next); only SHA-256s are kept, so a leaked
    /// store cannot be used to take sessions. Compare-and-set: the store changes it only if its
    /// current token is still `previous`, so that of two nodes resuming one token at once exactly
    /// one gets the session (`.taken` for the other). `done` runs on `loop` once the store has
    /// answered: the session hands the token to its client only after `.stored`, since a client
    /// told a token it cannot yet use elsewhere would be refused by a node that looks it up first
    /// (measured: a drain of 1,000 sessions on Redis).
    func tokenRotated(sessionID: String, from previous: String, to tokenHash: String, lastSeq: Int, on loop: EventLoop,
                      _ done: @escaping (TokenRotation) -> Void)
    /// The session ended for good (closed by its client, or its grace window passed): forgotten,
    /// but only if its token in the store is still `tokenHash`. A session another node resumed
    /// (its token rotated there) is that node's now, and a parked copy expiring here must not take
    /// its conversation with it.
    func sessionEnded(sessionID: String, tokenHash: String, on loop: EventLoop)
    /// The session whose current token hashes to `tokenHash`, with every item kept, or nil; `done`
    /// runs on `loop` (at once, for an embedded store).
    func load(tokenHash: String, on loop: EventLoop, _ done: @escaping (Result<StoredConversation?, StoreError>) -> Void)
    /// A document about a session that has ended, by its kind and the session's id (a report,
    /// docs/operations.md "Session reports"; a stored Live session), kept `keepSeconds` and then
    /// forgotten. Written again, it replaces the one before.
    func keep(_ kind: KeptKind, id: String, text: String, keepSeconds: Int, on loop: EventLoop)
    /// The document of that kind and id, or nil (none, or past its retention); `done` runs on `loop`.
    func kept(_ kind: KeptKind, id: String, on loop: EventLoop, _ done: @escaping (Result<String?, StoreError>) -> Void)
    /// False while the store cannot be reached from `loop` (a remote store down): sessions are
    /// then served without resume, and told so once.
    func isAvailable(on loop: EventLoop) -> Bool
    /// Where the store's series for /metrics are declared.
    var metricsRegistry: MetricsRegistry { get }
}

extension ConversationStore {
    public func prepare(on loop: EventLoop) {}

    /// A completed item whose keeping nobody waits for (tools, tests).
    public func itemCompleted(sessionID: String, seq: Int, itemID: String, item: String, event: String, on loop: EventLoop) {
        itemCompleted(sessionID: sessionID, seq: seq, itemID: itemID, item: item, event: event, on: loop) { _ in }
    }

    /// The store's series alone, as a scrape shows them.
    public func renderMetrics() -> String { metricsRegistry.render() }
}

/// What the store keeps about sessions that have ended (`ConversationStore.keep`).
public enum KeptKind: String, Sendable, CaseIterable {
    /// Every session's report, read at `GET /v1/sessions/{id}`.
    case report
    /// A GPT-Live session started with `store: true`, for its forks and its recording's download.
    case liveSession = "live_session"
}

/// A session as the store keeps it.
public struct StoredSession: Sendable, Equatable {
    public var sessionID: String
    /// Who owns it: a resume must come from the same tenant ("" without authentication).
    public var tenant: String
    public var tokenHash: String
    /// The `session` object (settings) as JSON.
    public var settings: String
    /// The sequence number of the last event sent.
    public var lastSeq: Int
    /// When the grace window of the current token ends, in seconds since the epoch (0: open).
    public var expiresAt: Int

    public init(sessionID: String, tenant: String, tokenHash: String, settings: String, lastSeq: Int, expiresAt: Int = 0) {
        self.sessionID = sessionID
        self.tenant = tenant
        self.tokenHash = tokenHash
        self.settings = settings
        self.lastSeq = lastSeq
        self.expiresAt = expiresAt
    }
}

/// A session and its completed items, in order, as loaded for a resume.
public struct StoredConversation: Sendable, Equatable {
    public struct Item: Sendable, Equatable {
        public var seq: Int
        public var itemID: String
        public var item: String
        public var event: String
        public init(seq: Int, itemID: String, item: String, event: String) {
            self.seq = seq
            self.itemID = itemID
            self.item = item
            self.event = event
        }
    }

    public var session: StoredSession
    public var items: [Item]
    public init(session: StoredSession, items: [Item]) {
        self.session = session
        self.items = items
    }
}

public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// What came of a token rotation (`ConversationStore.tokenRotated`).
public enum TokenRotation: Sendable, Equatable {
    /// The store holds the new token: the session is this node's.
    case stored
    /// The store's token is no longer the one rotated from: another node resumed the session
    /// first, and this one must let it go without writing to it again.
    case taken
    /// The store could not answer (down, busy, an error): nothing changed; ask again.
    case unavailable
}
