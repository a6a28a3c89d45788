import Testing
@testable import parley_load
#if canImport(Glibc)
import Glibc
#endif

@Suite struct ProcessFiguresTests {
    /// This test process, read the way `--server-pid` reads a peer server.
    @Test func aProcessHasMemoryAndCPUInProc() throws {
        var spin = 0.0
        for i in 0..<2_000_000 { spin += Double(i).squareRoot() }
        #expect(spin > 0)
        let me = ProcessFigures(pid: getpid())
        #expect((me.residentBytes ?? 0) > 1_000_000)
        #expect((me.cpuSeconds ?? 0) > 0)
        let metrics = try me.metrics(sessions: 0, startupResident: 0)
        #expect((metrics.cpuSeconds ?? 0) > 0)
    }
}
