import CPocketSphinx
#if canImport(Glibc)
import Glibc
#endif

/// One pocketsphinx decoder (acoustic model, dictionary and language model loaded), the edge
/// between Swift and libpocketsphinx. Loading takes about 0.4 s and tens of megabytes, so decoders
/// are made once and lent to one utterance at a time (`SphinxTranscriber`).
///
/// Not thread-safe: one utterance, on one thread at a time; the lender sees to it.
public final class SphinxDecoder: @unchecked Sendable {
    public struct Model: Sendable, Equatable {
        var acousticModel: String
        var languageModel: String
        var dictionary: String

        /// Debian's pocketsphinx-en-us.
        public static let debianEnglish = Model(acousticModel: "/usr/share/pocketsphinx/model/en-us/en-us",
                                         languageModel: "/usr/share/pocketsphinx/model/en-us/en-us.lm.bin",
                                         dictionary: "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict")
    }

    public struct LoadError: Error, CustomStringConvertible {
        public let description: String
    }

    private let decoder: OpaquePointer
    private var inUtterance = false

    /// The model's files are there and readable.
    static func check(_ model: Model) throws(LoadError) {
        for path in [model.languageModel, model.dictionary, model.acousticModel + "/mdef"] where access(path, R_OK) != 0 {
            throw LoadError(description: "pocketsphinx: cannot read \(path) (Debian: apt-get install pocketsphinx-en-us)")
        }
    }

    init(_ model: Model) throws(LoadError) {
        try Self.check(model)
        let arguments = ["parley", "-hmm", model.acousticModel, "-lm", model.languageModel, "-dict", model.dictionary,
                         "-logfn", "/dev/null"]
        // cmd_ln_init is variadic, which Swift cannot call; cmd_ln_parse_r takes an argv.
        var argv = arguments.map { strdup($0) }
        defer { for p in argv { free(p) } }
        let config = argv.withUnsafeMutableBufferPointer { cmd_ln_parse_r(nil, ps_args(), Int32($0.count), $0.baseAddress, 1) }
        guard let config else { throw LoadError(description: "pocketsphinx: the model settings were refused") }
        defer { cmd_ln_free_r(config) }
        guard let decoder = ps_init(config) else {
            throw LoadError(description: "pocketsphinx: cannot load the model in \(model.acousticModel)")
        }
        self.decoder = decoder
    }

    deinit { ps_free(decoder) }

    /// Starts an utterance, ending one left open.
    func start() {
        if inUtterance { ps_end_utt(decoder) }
        ps_start_utt(decoder)
        inUtterance = true
    }

    /// 16 kHz mono samples of the utterance.
    func process(_ samples: [Int16]) {
        guard inUtterance, !samples.isEmpty else { return }
        samples.withUnsafeBufferPointer { _ = ps_process_raw(decoder, $0.baseAddress, $0.count, 0, 0) }
    }

    /// The best hypothesis so far (or, after `end`, the final one).
    var hypothesis: String {
        var score: Int32 = 0
        guard let text = ps_get_hyp(decoder, &score) else { return "" }
        return String(cString: text)
    }

    /// Ends the utterance; its final text.
    func end() -> String {
        guard inUtterance else { return "" }
        ps_end_utt(decoder)
        inUtterance = false
        return hypothesis
    }
}
