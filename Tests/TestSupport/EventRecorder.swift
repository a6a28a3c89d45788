import JSON
import Loop
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A client's events as they arrive, each with when (monotonic nanoseconds), read on a thread of
/// their own while the test streams its microphone in real time: a test that times what the
/// server did must not read an event only once it has finished sending.
public final class EventRecorder: @unchecked Sendable {
    public let client: TestClient
    private let received = Mutex<[(event: JSON, at: UInt64)]>([])
    private var thread: pthread_t?

    public init(_ client: TestClient) throws {
        self.client = client
        thread = try Thread.spawn(name: "test-events") { [self] in
            while let event = try? self.client.readEvent() {
                received.withLock { $0.append((event, MonotonicClock.nanoseconds())) }
            }
        }
    }

    /// What has arrived so far.
    public var events: [(event: JSON, at: UInt64)] { received.withLock { $0 } }

    /// The first event of `type` and when it came, waiting up to `seconds` for it.
    public func first(_ type: String, within seconds: Double = 10) -> (event: JSON, at: UInt64)? {
        let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
        repeat {
            if let found = received.withLock({ $0.first { $0.event["type"]?.string == type } }) { return found }
            usleep(10_000)
        } while MonotonicClock.nanoseconds() < deadline
        return nil
    }

    /// Waits up to `seconds` until `count` events of `type` have come; whether they did. For an
    /// outcome that comes when it comes (a reply finishing on a loaded machine), never a timing.
    @discardableResult
    public func wait(for type: String, count: Int, within seconds: Double = 30) -> Bool {
        let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
        repeat {
            if received.withLock({ $0.count { $0.event["type"]?.string == type } }) >= count { return true }
            usleep(10_000)
        } while MonotonicClock.nanoseconds() < deadline
        return false
    }

    /// Stops reading (the connection is shut, after a moment for the last events to arrive)
    /// and returns everything read.
    public func finish() -> [(event: JSON, at: UInt64)] {
        usleep(300_000)
        client.hangUp()
        if let thread { Thread.join(thread) }
        thread = nil
        return received.withLock { $0 }
    }
}
