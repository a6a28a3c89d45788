/// A callback to run on the loop later; cancel it to keep it from running.
public final class ScheduledTask {
    let deadline: UInt64
    let sequence: UInt64
    fileprivate var body: (() -> Void)?

    init(deadline: UInt64, sequence: UInt64, body: @escaping () -> Void) {
        self.deadline = deadline
        self.sequence = sequence
        self.body = body
    }

    public func cancel() { body = nil }
    public var isCancelled: Bool { body == nil }
}

/// One loop's timed callbacks (streaming pace, upstream time-outs): a binary min-heap by deadline,
/// O(log n) to add, cancellation by flag. Connection deadlines, which are far more numerous and
/// mostly moved rather than fired, stay on the `TimerWheel`.
struct TaskScheduler {
    private var heap: [ScheduledTask] = []
    private var nextSequence: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }

    mutating func schedule(at deadline: UInt64, _ body: @escaping () -> Void) -> ScheduledTask {
        nextSequence += 1
        let task = ScheduledTask(deadline: deadline, sequence: nextSequence, body: body)
        heap.append(task)
        siftUp(heap.count - 1)
        return task
    }

    /// Nanoseconds until the earliest live deadline, if any.
    mutating func nextDeadline() -> UInt64? {
        while let first = heap.first, first.isCancelled { removeFirst() }
        return heap.first?.deadline
    }

    /// Removes and returns the bodies of every task due at `now`, in deadline order.
    mutating func due(at now: UInt64) -> [() -> Void] {
        var bodies: [() -> Void] = []
        while let first = heap.first, first.deadline <= now || first.isCancelled {
            removeFirst()
            if let body = first.body {
                first.body = nil
                bodies.append(body)
            }
        }
        return bodies
    }

    private static func before(_ a: ScheduledTask, _ b: ScheduledTask) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
    }

    private mutating func removeFirst() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        if !heap.isEmpty { siftDown(0) }
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(heap[child], heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, Self.before(heap[left], heap[smallest]) { smallest = left }
            if right < heap.count, Self.before(heap[right], heap[smallest]) { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
