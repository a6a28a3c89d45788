import Testing
import Codec

@Suite struct OpusLibraryTests {
    @Test func libopusIsLinked() {
        #expect(OpusLibrary.version.hasPrefix("libopus "))
    }
}
