import Synchronization
import Metrics
import TLS

/// The server's certificate and key, loaded from their files at start and again on reload. New
/// connections take the current context; sessions already open keep the one they began with, which
/// OpenSSL frees when the last of them ends. So a reload drops no one.
final class TLSCredentials: Sendable {
    let certificateFile: String
    let keyFile: String
    private let current: Mutex<TLSContext>
    let reloads = Counter()
    let reloadFailures = Counter()

    init(certificateFile: String, keyFile: String) throws(TLSError) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        current = Mutex(try TLSContext.server(certificateFile: certificateFile, keyFile: keyFile))
    }

    var context: TLSContext { current.withLock { $0 } }

    /// Loads the files again; on failure the old context stays in service.
    func reload() throws(TLSError) {
        let fresh: TLSContext
        do {
            fresh = try TLSContext.server(certificateFile: certificateFile, keyFile: keyFile)
        } catch {
            reloadFailures.add(1)
            throw error
        }
        current.withLock { $0 = fresh }
        reloads.add(1)
    }
}
