import Store
/// How sessions that ask for resume are kept (docs/operations.md, "Resume"): how long one waits
/// for its client, how many unacknowledged events it keeps, and where its items go.
public struct ResumeSettings: Sendable {
    /// `--resume-grace-seconds`: how long a session whose client is gone waits for it.
    public var graceSeconds: Double = 30
    /// Bytes of unacknowledged events kept per session for replay.
    public var maxLogBytes = 1 << 20
    /// `--store`: where items are written as they complete; nil keeps them in memory only.
    public var store: (any ConversationStore)?
    /// `--resume-store-wait-seconds`: how long a completed item's event (and all after it) waits
    /// for the store to keep the item (`KeptBeforeTold`); past it they go unkept. A Redis kill -9
    /// and restart is a 4 to 6 s outage as the nodes see it (make chaos), hence 10.
    public var storeWaitSeconds: Double = 10
    /// `--report-retention-days`: how long a session's report is kept (every session's, in the
    /// store when there is one); 0 keeps none.
    public var reportSeconds = 7 * 86_400

    public init(graceSeconds: Double = 30, store: (any ConversationStore)? = nil) {
        self.graceSeconds = graceSeconds
        self.store = store
    }
}
