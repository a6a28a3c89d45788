import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// A pthread running a closure: the loops want real threads, one each, for their whole life; the
/// worker pools and the load harness's background scrape use it too.
public enum Thread {
    private final class Start {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    @discardableResult
    public static func spawn(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) -> pthread_t {
        var thread = pthread_t()
        let start = Unmanaged.passRetained(Start(body)).toOpaque()
        let rc = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            start.body()
            return nil
        }, start)
        guard rc == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            throw SystemError("pthread_create", errno: rc)
        }
        _ = parley_set_thread_name(thread, String(name.prefix(15)))
        return thread
    }

    /// Waits for `thread` to end (pthread_join).
    public static func join(_ thread: pthread_t) {
        pthread_join(thread, nil)
    }
}
