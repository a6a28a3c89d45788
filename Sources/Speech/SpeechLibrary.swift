import CEspeak
import CPocketSphinx
import Synchronization

/// A speech library opened with dlopen when first used, not linked: linked, espeak-ng's and
/// pocketsphinx's dependency trees (PulseAudio, ALSA, X11, systemd, gcrypt, FLAC, Vorbis, LAME;
/// LAPACK, BLAS, gfortran) cost every server about 2.5 MB of resident pages at start (measured in
/// /proc/PID/smaps, docs/benchmarks.md), whether it spoke or heard or not. Opened once; a library
/// that cannot be opened says why, every time it is asked, and never crashes.
public final class SpeechLibrary: Sendable {
    public struct LoadError: Error, CustomStringConvertible, Equatable {
        /// espeak-ng or pocketsphinx.
        public let library: String
        public let soname: String
        /// dlopen's or dlsym's reason.
        public let reason: String
        /// The Debian package holding the library.
        public let package: String

        public var description: String { "\(library): cannot load \(soname): \(reason) (Debian: apt-get install \(package))" }
    }

    let name: String
    let soname: String
    let package: String
    /// The C loader (parley_espeak_load, parley_sphinx_load): 0, or -1 with the reason written.
    private let open: @Sendable (UnsafePointer<CChar>, UnsafeMutablePointer<CChar>, Int) -> Int32
    private let state = Mutex<Result<Void, LoadError>?>(nil)

    private init(name: String, soname: String, package: String, open: @escaping @Sendable (UnsafePointer<CChar>, UnsafeMutablePointer<CChar>, Int) -> Int32) {
        self.name = name
        self.soname = soname
        self.package = package
        self.open = open
    }

    static let espeak = espeakLibrary(soname: "libespeak-ng.so.1")
    static let pocketsphinx = pocketsphinxLibrary(soname: "libpocketsphinx.so.3")

    /// espeak-ng's loader for `soname` (tests give one that is not there).
    static func espeakLibrary(soname: String) -> SpeechLibrary {
        SpeechLibrary(name: "espeak-ng", soname: soname, package: "libespeak-ng1") { parley_espeak_load($0, $1, $2) }
    }

    /// pocketsphinx's loader for `soname` (tests give one that is not there).
    static func pocketsphinxLibrary(soname: String) -> SpeechLibrary {
        SpeechLibrary(name: "pocketsphinx", soname: soname, package: "libpocketsphinx3") { parley_sphinx_load($0, $1, $2) }
    }

    /// Opens the library the first time; after that, the first answer again.
    func load() throws(LoadError) {
        let result = state.withLock { state in
            if let state { return state }
            var reason = [CChar](repeating: 0, count: 512)
            let opened = soname.withCString { name in reason.withUnsafeMutableBufferPointer { open(name, $0.baseAddress!, $0.count) } }
            let result: Result<Void, LoadError> = opened == 0 ? .success(())
                : .failure(LoadError(library: self.name, soname: soname, reason: String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), package: package))
            state = result
            return result
        }
        try result.get()
    }
}
