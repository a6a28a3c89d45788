@testable import Speech
import Testing

/// The speech libraries are opened with dlopen when first used (`SpeechLibrary`): one that cannot
/// be opened is a typed error saying which and why, asked again the same answer, never a crash.
@Suite struct SpeechLibraryTests {
    @Test func aMissingLibraryIsATypedError() {
        let missing = SpeechLibrary.espeakLibrary(soname: "libparley-no-such-espeak.so.1")
        #expect(throws: SpeechLibrary.LoadError.self) { try missing.load() }
        do {
            try missing.load()
            Issue.record("loaded a library that is not there")
        } catch {
            #expect(error.library == "espeak-ng")
            #expect(error.soname == "libparley-no-such-espeak.so.1")
            #expect(error.reason.contains("libparley-no-such-espeak.so.1"))
            #expect(error.description.contains("apt-get install libespeak-ng1"))
        }
    }

    /// A library that opens but lacks a function Parley calls: the same typed error, naming it.
    @Test func aLibraryWithoutTheFunctionsIsATypedError() {
        let wrong = SpeechLibrary.pocketsphinxLibrary(soname: "libm.so.6")
        #expect(throws: SpeechLibrary.LoadError.self) { try wrong.load() }
        do { try wrong.load() } catch { #expect(error.reason == "libm.so.6 has no ps_args") }
    }

    /// A failed attempt leaves the real library loadable.
    @Test func theInstalledLibrariesLoadAfterAFailure() throws {
        let missing = SpeechLibrary.pocketsphinxLibrary(soname: "libparley-no-such-sphinx.so.3")
        #expect(throws: SpeechLibrary.LoadError.self) { try missing.load() }
        try SpeechLibrary.pocketsphinx.load()
        try SpeechLibrary.espeak.load()
    }
}
