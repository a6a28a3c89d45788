import JSON
import Loop
import Server
import Store
import SessionEngine

/// The resume life cycle of one session that asked for it (docs/protocol.md, "Resume"): its
/// numbered log of events, its current token, the store's copy, and what happens when its client
/// goes (parked in `ResumeRegistry` for the grace window), comes back (the log replayed after a
/// new token is stored), or is asked to go elsewhere (a drain).
///
/// A class, held by the handler only for sessions that asked: the rest carry one nil pointer for
/// it, not the hundred bytes of its fields.
final class SessionResumption {
    private(set) var log: ResumeLog
    /// The hash of the token the client holds (the one it presented, or the last one it was sent),
    /// under which a parked session is found; and the one the store holds, which the next rotation
    /// compares against (`ConversationStore.tokenRotated`). They differ while a rotation is in
    /// flight: a token is the client's only once it has been sent to it.
    private var heldHash = ""
    private var storedHash = ""
    /// A rotation the store has not answered yet, and the one asked for meanwhile (a client back
    /// before the store answered its last reconnect): that one waits, or it would compare against
    /// a token the store is just replacing and find the session taken.
    private var rotating = false
    private var nextRotation: (() -> Void)?
    /// Whether the store's copy of the session is this one's to write. False for a session
    /// restored from the store until its first token is stored (another node may be restoring it
    /// at the same moment), and for good once another node has taken it (`.taken`).
    private var owned = true
    let tenant: String
    private var graceTimer: ScheduledTask?
    private var parkedAt: UInt64?
    /// Frames held until the store keeps the item they follow, and the bound on that wait.
    private var gate = KeptBeforeTold()
    private var gateTimer: ScheduledTask?
    /// The session this is the resumption of; it holds this object, so it outlives it.
    private unowned let session: RealtimeSessionHandler

    init(of session: RealtimeSessionHandler, lastSeq: Int, tenant: String) {
        self.session = session
        self.tenant = tenant
        log = ResumeLog(lastSeq: lastSeq, maxBytes: session.driver.resumeSettings.maxLogBytes)
    }

    private var driver: SessionDriver { session.driver }
    private var settings: ResumeSettings { driver.resumeSettings }

    /// The session's first client is here: its first token goes out, with the session's row on its
    /// way to the store (a client that drops within a store's round trip of opening has nothing to
    /// resume yet anyway). False when the store cannot be reached: the client is told so once, and
    /// the session goes on without resume.
    func opened(on socket: any SessionSocket) -> Bool {
        if let store = settings.store, !store.isAvailable(on: socket.loop) {
            session.send(driver.event(.error(EventError(type: .server, code: "resume_unavailable",
                                                        message: "the \(store.kind) store cannot be reached: this session cannot be resumed"))), on: socket)
            return false
        }
        let token = ResumeToken.make()
        heldHash = token.hash
        storedHash = token.hash
        settings.store?.sessionStarted(StoredSession(sessionID: driver.engine.sessionID, tenant: tenant, tokenHash: token.hash,
                                                     settings: "{}", lastSeq: log.lastSeq), on: socket.loop)
        session.sendControl(.resumeToken(token: token.value, graceSeconds: Int(settings.graceSeconds), lastSeq: log.lastSeq), on: socket)
        return true
    }

    /// `session.ack`: the client has every event up to `seq`.
    func acknowledge(_ seq: Int) { log.acknowledge(seq) }

    // MARK: Sending

    /// An event on its way to the client: numbered, kept until acknowledged, and (a completed item,
    /// a finished response, new settings) written to the store. `text` is empty for events the
    /// client's dialect does not carry, which are only stored. What is stamped goes out through
    /// `deliver`, so that an item the client is told is done is already kept.
    func stamp(_ event: ServerEvent, _ text: String, on loop: EventLoop) -> String {
        let stamped = text.isEmpty ? text : log.stamp(text)
        persist(event, text: stamped, on: loop)
        return stamped
    }

    /// A frame for the client: sent now, or held behind a completed item the store has not yet
    /// kept (`KeptBeforeTold`), for `ResumeSettings.storeWaitSeconds` at most.
    func deliver(_ frame: KeptBeforeTold.Frame, on socket: any SessionSocket) {
        // Parked: the frame is in the replay log, which the next client gets through here; held
        // now as well, it would reach that client twice.
        guard socket.hasClient else { return }
        guard gate.admit(frame) else {
            if gateTimer == nil {
                gateTimer = socket.loop.schedule(after: settings.storeWaitSeconds) { [weak self] in
                    guard let self else { return }
                    gateTimer = nil
                    SessionMetrics.shared.storeWaitsGivenUp.add(1)
                    release(gate.gaveUp())
                }
            }
            return
        }
        Self.send(frame, on: socket)
    }

    /// A store write the client waits for (`KeptBeforeTold`): the store's answer, whatever it is,
    /// lets what it held back go, to the client of now.
    private func awaited() -> (Bool) -> Void {
        let ticket = gate.writeBegan()
        return { [weak self] _ in
            guard let self else { return }
            release(gate.answered(ticket))
        }
    }

    private func release(_ frames: [KeptBeforeTold.Frame]) {
        if !gate.isHolding {
            gateTimer?.cancel()
            gateTimer = nil
        }
        guard !frames.isEmpty, let socket = driver.socket else { return }
        for frame in frames { Self.send(frame, on: socket) }
    }

    private static func send(_ frame: KeptBeforeTold.Frame, on socket: any SessionSocket) {
        switch frame {
        case .text(let text): socket.send(text: text)
        case .binary(let bytes): (socket as? any FrameSocket)?.send(binary: bytes)
        }
    }

    private func persist(_ event: ServerEvent, text: String, on loop: EventLoop) {
        guard let store = settings.store, owned else { return }
        let seq = log.lastSeq
        // Computed where used: the id is an 18-byte string, made on the heap, and most events
        // (the deltas) are not kept.
        var id: String { driver.engine.sessionID }
        func kept(_ itemID: String, _ item: String) {
            store.itemCompleted(sessionID: id, seq: seq, itemID: itemID, item: item, event: text, on: loop, awaited())
        }
        switch event.kind {
        case .conversationItemDone(let item, _):
            kept(item.id, item.json(dialect: .ga).description)
        case .inputAudioTranscriptionCompleted(let itemID, _, let transcript, _, _):
            let item = ConversationItem(id: itemID, role: .user, status: .completed, content: [.inputAudio(transcript: transcript)])
            kept(itemID, item.json(dialect: .ga).description)
        case .responseDone(let response):
            // Not an item of the conversation: kept so that a client that missed it gets the
            // response whole after a resume elsewhere.
            kept(response.id, "")
        case .conversationItemTruncated(let itemID, _, _):
            // The history now keeps what was heard: so must the store, or a resume elsewhere
            // would bring back the words the user never heard.
            guard let entry = driver.engine.conversation.entry(itemID) else { return }
            store.itemChanged(sessionID: id, itemID: itemID, item: SessionEngine.item(entry).json(dialect: .ga).description, on: loop, awaited())
        case .sessionUpdated(let info):
            store.settingsChanged(sessionID: id, settings: info.json(dialect: .ga).description, on: loop)
        default:
            break
        }
    }

    // MARK: The client goes and comes back

    /// The client went without ending the session: it is parked where a reconnect with its token
    /// finds it, for the grace window; then it ends (`expired`).
    func park(on loop: EventLoop, expired: @escaping () -> Void) {
        let hash = heldHash
        gate.clientLeft()
        release([]) // nothing held now: the bound's timer goes
        parkedAt = MonotonicClock.nanoseconds()
        graceTimer = loop.schedule(after: settings.graceSeconds) { [weak self] in
            // The registry's reference is what keeps a parked session alive: hold it here before
            // taking it out, or the session would go before it is ended.
            guard let self else { return }
            let parked = session
            guard ResumeRegistry.shared.remove(tokenHash: hash) else { return }
            SessionMetrics.shared.expired.add(1)
            withExtendedLifetime(parked) { expired() }
        }
        SessionMetrics.shared.sessionsDetached.add(1)
        register(home: loop)
    }

    /// Where a reconnect with the client's token finds this session.
    private func register(home: EventLoop) {
        ResumeRegistry.shared.park(.init(session: Handoff(session), home: home.handle, tenant: tenant), tokenHash: heldHash)
    }

    /// The session is parked no longer (its client is back, or it ends): its grace timer goes.
    /// Returns how long it was parked, nil if it was not.
    @discardableResult
    private func unpark() -> UInt64? {
        guard let parkedAt else { return nil }
        graceTimer?.cancel()
        graceTimer = nil
        self.parkedAt = nil
        SessionMetrics.shared.sessionsDetached.add(-1)
        return MonotonicClock.nanoseconds() &- parkedAt
    }

    /// The session is over: nothing can resume it, and the store forgets it.
    func ended() {
        if unpark() != nil { _ = ResumeRegistry.shared.remove(tokenHash: heldHash) }
        // A session another node has taken is that node's to end.
        if owned, let loop = driver.loop { settings.store?.sessionEnded(sessionID: driver.engine.sessionID, tokenHash: storedHash, on: loop) }
    }

    /// A reconnect with this session's token, on its home loop: the events after `lastSeq` are
    /// replayed and the session goes on with `socket` (`sender` is its client from now on); or, for
    /// a `lastSeq` outside what is kept, the reconnect is refused and the session stays parked for
    /// a right one.
    func attach(_ socket: any SessionSocket, lastSeq: Int, from sender: SessionClient, restored: Bool = false) {
        switch log.replay(after: lastSeq) {
        case .failure(.outOfRange(let last, let oldest)):
            SessionMetrics.shared.resumes.add(1, .outOfRange)
            session.sendControl(.error(EventError(type: .invalidRequest, code: "resume_out_of_range",
                                                  message: "last_seq \(lastSeq) is outside the events this session keeps (\(oldest) to \(last))")), on: socket)
            socket.close(.policy, reason: "resume_out_of_range")
            if !restored { register(home: socket.loop) }
            return
        case .success:
            break
        }
        if let parked = unpark() { SessionMetrics.shared.resumeSeconds.observe(nanoseconds: parked) }
        // The client's frames count from now; what the session sends until the new token is
        // stored goes to the log, and is in the replay that follows `session.resumed`.
        session.client = sender
        rotateToken(for: sender, on: socket.loop) { [weak self] token in
            guard let self else { return }
            guard let token else { return lostToAnotherNode(socket) }
            guard let replay = try? log.replay(after: lastSeq).get() else { return }
            SessionMetrics.shared.resumes.add(1, restored ? .store : .memory)
            driver.attach(socket)
            driver.noteResumed()
            session.sendControl(.sessionResumed(sessionID: driver.engine.sessionID, token: token.value, lastSeq: lastSeq, replayed: replay.count), on: socket)
            heldHash = token.hash
            for text in replay { deliver(.text(text), on: socket) }
            sessionLog.info("session resumed", metadata: ["session": "\(driver.engine.sessionID)", "replayed": "\(replay.count)", "from": restored ? "store" : "memory"])
            // A turn the old process was answering when it went is answered again, now that the
            // session is this node's.
            if restored { driver.answerIfUnanswered() }
        }
    }

    /// Another node resumed this session first (the store's token had already moved on): the
    /// reconnect here is refused as a used token is, and the session ends without touching the
    /// store, which is the other node's now.
    private func lostToAnotherNode(_ socket: any SessionSocket) {
        owned = false
        SessionMetrics.shared.resumes.add(1, .taken)
        sessionLog.info("resume lost to another node", metadata: ["session": "\(driver.engine.sessionID)"])
        session.sendControl(.error(.resumeTokenInvalid), on: socket)
        socket.close(.policy, reason: EventError.resumeTokenInvalid.code)
    }

    /// A session restored from the store: its stored events after `lastSeq` are the replay.
    func restore(_ stored: StoredConversation, lastSeq: Int) {
        let kept = stored.items.filter { !$0.event.isEmpty }.map { ResumeLog.Entry(seq: $0.seq, text: $0.event) }
        log = ResumeLog(restoring: kept, lastSeq: max(log.lastSeq, lastSeq), maxBytes: settings.maxLogBytes)
        storedHash = stored.session.tokenHash
        heldHash = stored.session.tokenHash
        owned = false
    }

    // MARK: Tokens

    /// Each resume uses the token up; the next one is handed to `body` once the store has it, so
    /// that whichever node the client reaches next can find it; nil if another node has taken the
    /// session meanwhile. `body` runs only if `client` is still the session's then. A client gone
    /// before it was sent the new token still holds the old one (a reconnect the client gave up
    /// on, or that dropped, while the store was slow): the store is given the old one back, and the
    /// session is parked under it, so that the client's next reconnect finds it on any node.
    func rotateToken(for client: SessionClient, on loop: EventLoop, then body: @escaping (ResumeToken?) -> Void) {
        guard !rotating else {
            nextRotation = { [weak self] in self?.rotateToken(for: client, on: loop, then: body) }
            return
        }
        let token = ResumeToken.make()
        guard settings.store != nil else {
            if session.client == client { body(token) }
            return
        }
        rotating = true
        storeToken(token.hash, on: loop, attempt: 1) { [weak self] rotation in
            guard let self else { return }
            let told = session.client == client
            switch rotation {
            case .stored where !told:
                // If this hand-back cannot be stored either, the session is still found here, in
                // memory, under the client's token; only another node would refuse it.
                return storeToken(heldHash, on: loop, attempt: 1) { [weak self] _ in self?.rotationSettled() }
            case .stored, .unavailable:
                // Unavailable for 2 s: the token goes out unstored, which this node can still find.
                if told { body(token) }
            case .taken:
                if told { body(nil) }
            }
            rotationSettled()
        }
    }

    private func rotationSettled() {
        rotating = false
        let next = nextRotation
        nextRotation = nil
        next?()
    }

    /// Moves the store's token for this session from `storedHash` to `hash`. A store that could not
    /// take it (Redis busy while a node takes over a thousand sessions) is asked again, every 50 ms
    /// for up to 2 s: a token handed out unstored would be refused by whichever node the client
    /// reached next (the survive benchmark lost 860 of 3,000 sessions so before this).
    private func storeToken(_ hash: String, on loop: EventLoop, attempt: Int, then done: @escaping (TokenRotation) -> Void) {
        guard let store = settings.store else { return done(.unavailable) }
        store.tokenRotated(sessionID: driver.engine.sessionID, from: storedHash, to: hash, lastSeq: log.lastSeq, on: loop) { [weak self] rotation in
            guard let self else { return }
            switch rotation {
            case .stored:
                storedHash = hash
                owned = true
            case .unavailable where attempt < Self.tokenStoreAttempts:
                loop.schedule(after: 0.05) { [weak self] in self?.storeToken(hash, on: loop, attempt: attempt + 1, then: done) }
                return
            case .taken, .unavailable:
                break
            }
            done(rotation)
        }
    }

    private static let tokenStoreAttempts = 40

    /// A drain: the client is told its token afresh and closed with 1012, to reconnect elsewhere.
    func drain(_ socket: any SessionSocket, client current: SessionClient) {
        rotateToken(for: current, on: socket.loop) { [weak self] token in
            guard let self else { return }
            guard let token else { return lostToAnotherNode(socket) }
            session.sendControl(.resumeToken(token: token.value, graceSeconds: Int(settings.graceSeconds), lastSeq: log.lastSeq), on: socket)
            heldHash = token.hash
            socket.close(.serverRestart, reason: "server restarting; resume elsewhere")
        }
    }
}
