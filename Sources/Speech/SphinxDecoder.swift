import CPocketSphinx
#if canImport(Glibc)
import Glibc
#endif

/// One pocketsphinx decoder (acoustic model, dictionary and language model loaded), the edge
/// between Swift and libpocketsphinx (CPocketSphinx opens it with dlopen, through
/// `SpeechLibrary.pocketsphinx`, when first used). Loading takes about 0.4 s and tens of megabytes, so decoders
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
    /// The rate of the audio the last utterance came at (before any resampling to the model's).
    private var sourceRate = 16_000
    /// The live cepstral mean pocketsphinx carries from one utterance to the next, kept for each
    /// source rate while the decoder hears another, and the model's initial one (`-cmninit`).
    /// Telephone audio, resampled up, has nothing above 4 kHz: its mean is far from wideband
    /// speech's, and one carried across misleads the next turn. Measured on twelve espeak-ng
    /// sentences at 16 kHz, each after an 8 kHz one on the same decoder: 11 of 75 words heard,
    /// against 28 on a decoder that heard only 16 kHz, and 34 with the mean kept per rate.
    private var means: [Int: [Float]] = [:]
    private var initialMean: [Float] = []

    /// The telephone band as pocketsphinx's front end sees it, a constant in the cepstral domain
    /// (a channel is, which is what cepstral mean normalisation removes): the live mean after six
    /// espeak-ng sentences sent at 8 kHz through µ-law and resampled to 16 kHz, less the live mean
    /// after the same six at 16 kHz. A decoder's first telephone turn starts from the model's
    /// `-cmninit` plus this, rather than from a wideband mean it would take a whole turn to
    /// unlearn: on twelve other sentences, each the first a fresh decoder heard, 19 of 75 words
    /// heard against 6 without it (and 24 for the same sentences at 16 kHz).
    static let telephoneBandOffset: [Float] = [-7.87, 27.67, -34.15, 21.78, -6.27, -8.56, 19.57, -15.42, 4.20, 8.61, -19.85, 22.24, -17.11]

    /// The library loads and the model's files are there and readable.
    static func check(_ model: Model) throws(LoadError) {
        do { try SpeechLibrary.pocketsphinx.load() } catch { throw LoadError(description: error.description) }
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
        var refused: Int32 = 0
        let decoder = argv.withUnsafeMutableBufferPointer { parley_sphinx_decoder_new(Int32($0.count), $0.baseAddress, &refused) }
        guard let decoder else {
            if refused != 0 { throw LoadError(description: "pocketsphinx: the model settings were refused") }
            throw LoadError(description: "pocketsphinx: cannot load the model in \(model.acousticModel)")
        }
        self.decoder = decoder
        initialMean = liveMean
    }

    /// Where a decoder's first utterance from audio at `rate` starts: below 16 kHz, the
    /// telephone band's mean.
    private func startingMean(for rate: Int) -> [Float] {
        guard rate < 16_000, initialMean.count == Self.telephoneBandOffset.count else { return initialMean }
        return zip(initialMean, Self.telephoneBandOffset).map { $0 + $1 }
    }

    /// pocketsphinx's running estimate of the cepstral mean (sphinxbase's cmn_live_get/set).
    private var liveMean: [Float] {
        get {
            let length = Int(parley_sphinx_mean_length(decoder))
            guard length > 0 else { return [] }
            var mean = [Float](repeating: 0, count: length)
            parley_sphinx_mean_get(decoder, &mean)
            return mean
        }
        set {
            guard newValue.count == Int(parley_sphinx_mean_length(decoder)), !newValue.isEmpty else { return }
            parley_sphinx_mean_set(decoder, newValue)
        }
    }

    deinit { parley_sphinx_decoder_free(decoder) }

    /// Starts an utterance, ending one left open. `sourceRate`: the rate its audio came at, whose
    /// cepstral mean it starts from.
    func start(sourceRate rate: Int = 16_000) {
        if inUtterance { parley_sphinx_end(decoder) }
        if rate != sourceRate {
            means[sourceRate] = liveMean
            liveMean = means[rate] ?? startingMean(for: rate)
            sourceRate = rate
        }
        parley_sphinx_start(decoder)
        inUtterance = true
    }

    /// 16 kHz mono samples of the utterance (the model's rate).
    func process(_ samples: [Int16]) {
        guard inUtterance, !samples.isEmpty else { return }
        samples.withUnsafeBufferPointer { parley_sphinx_process(decoder, $0.baseAddress, $0.count) }
    }

    /// The best hypothesis so far (or, after `end`, the final one).
    var hypothesis: String {
        guard let text = parley_sphinx_hypothesis(decoder) else { return "" }
        return String(cString: text)
    }

    /// Ends the utterance; its final text.
    func end() -> String {
        guard inUtterance else { return "" }
        parley_sphinx_end(decoder)
        inUtterance = false
        return hypothesis
    }
}
