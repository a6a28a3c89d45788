/// One request in flight. `cancel()` aborts it upstream (its connection is closed, not reused)
/// and no callback runs afterwards.
public final class HTTPClientCall {
    var onHead: ((HTTPClientResponseHead) -> Void)?
    var onBody: ((UnsafeRawBufferPointer) -> Void)?
    var onEnd: ((Result<Void, HTTPClientError>) -> Void)?
    weak var connection: UpstreamConnection?
    public private(set) var isFinished = false

    init(onHead: @escaping (HTTPClientResponseHead) -> Void, onBody: @escaping (UnsafeRawBufferPointer) -> Void,
         onEnd: @escaping (Result<Void, HTTPClientError>) -> Void) {
        self.onHead = onHead
        self.onBody = onBody
        self.onEnd = onEnd
    }

    public func cancel() {
        guard !isFinished else { return }
        finishQuietly()
        connection?.abandon()
    }

    func finish(_ result: Result<Void, HTTPClientError>) {
        guard !isFinished else { return }
        let callback = onEnd
        finishQuietly()
        callback?(result)
    }

    private func finishQuietly() {
        isFinished = true
        onHead = nil
        onBody = nil
        onEnd = nil
    }
}
