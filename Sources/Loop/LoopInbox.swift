import Synchronization

/// Results handed to a loop by other threads: a multi-producer queue that the loop drains on its
/// own thread when its eventfd wakes it. Only the first post into an empty inbox writes the
/// eventfd; the rest ride on that wake-up.
final class LoopInbox: Sendable {
    struct Delivery: Sendable {
        let ticket: UInt64
        let result: any Sendable
    }

    /// A closure to run on the loop (`LoopHandle.execute`), under the one ticket offloads never use.
    struct Job: Sendable { let body: @Sendable () -> Void }
    static let jobTicket: UInt64 = 0

    private let deliveries = Mutex<[Delivery]>([])
    private let wakeFD: Int32

    init(wakeFD: Int32) { self.wakeFD = wakeFD }

    func post(_ delivery: Delivery) {
        let first = deliveries.withLock { list -> Bool in
            list.append(delivery)
            return list.count == 1
        }
        if first { Sys.signal(eventfd: wakeFD) }
    }

    /// Nothing posted and not yet taken.
    var isEmpty: Bool { deliveries.withLock { $0.isEmpty } }

    /// Everything posted so far, oldest first.
    func take() -> [Delivery] {
        deliveries.withLock { list in
            defer { list.removeAll(keepingCapacity: true) }
            return list
        }
    }
}
