import JSON
import Access
import Loop
import Testing
import TestSupport
import TLS
@testable import Server
#if canImport(Glibc)
import Glibc
#endif

/// Who may connect to `parley serve`: keys from a file or the environment, and no open port by accident.
@Suite struct AccessCommandTests {
    @Test func aPublicAddressWithoutKeysIsRefusedWithAReason() {
        do {
            _ = try ServerProcess(arguments: "--host 0.0.0.0")
            Issue.record("the server started on 0.0.0.0 without keys")
        } catch let failure as ServerProcess.StartFailure {
            #expect(failure.description.contains("refusing to serve 0.0.0.0 without API keys") && failure.description.contains("--insecure-no-auth"),
                    "\(failure)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func keysFromAFileAreRequiredAtTheUpgrade() throws {
        let path = "/tmp/parley-keys-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let file = fopen(path, "w")
        fputs("# team keys\nkey-alpha\n\n  key-beta  \n", file)
        fclose(file)
        defer { unlink(path) }
        let process = try ServerProcess(arguments: "--api-keys \(path)")
        #expect(try TestClient(port: process.port).upgrade(path: "/v1/realtime").status == 401)
        #expect(try TestClient(port: process.port).upgrade(path: "/v1/realtime", extraHeaders: "Authorization: Bearer key-beta\r\n").status == 101)
        #expect(try TestClient(port: process.port).upgrade(path: "/v1/realtime", extraHeaders: "Authorization: Bearer key-alpha\r\n").status == 101)
        #expect(throws: ServerProcess.StartFailure.self) { try ServerProcess(arguments: "--api-keys /nonexistent/keys") }
    }

    @Test func tokensMadeByParleyTokenOpenSessionsAndNeverReachTheLog() throws {
        let base = "/tmp/parley-jwt-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { for suffix in [".pem", ".pub.pem"] { unlink(base + suffix) } }
        #expect(try Subprocess.capture([ServerProcess.parleyPath, "token", "--new-key", "es256", "--key", base + ".pem"]).status == 0)
        let made = try Subprocess.capture([ServerProcess.parleyPath, "token", "--key", base + ".pem", "--sub", "acme", "--aud", "parley", "--max-sessions", "1"])
        let token = String(made.stdout.prefix { !$0.isWhitespace })
        #expect(made.status == 0 && token.split(separator: ".").count == 3, "\(made.stderr)")
        let process = try ServerProcess(arguments: "--log-level trace --jwt-public-key \(base).pub.pem --jwt-audience parley --transcriber none --synthesizer none")
        #expect(try TestClient(port: process.port).upgrade(path: "/v1/realtime").status == 401)
        let held = try TestClient(port: process.port)
        #expect(try held.upgrade(path: "/v1/realtime", extraHeaders: "Authorization: Bearer \(token)\r\n").status == 101)
        // The token's claim: one session at a time for acme.
        #expect(try TestClient(port: process.port).upgrade(path: "/v1/realtime", extraHeaders: "Authorization: Bearer \(token)\r\n").status == 429)
        #expect(try TestClient(port: process.port).upgrade(path: "/v1/realtime", extraHeaders: "Authorization: Bearer \(token.dropLast(3))AAA\r\n").status == 401)
        process.signal(SIGTERM)
        #expect(process.waitForExit(seconds: 10) == 0)
        let log = process.remainingOutput()
        #expect(log.contains("status=429") && !log.contains(String(token.split(separator: ".")[2].prefix(20))) && !log.contains(String(token.prefix(30))))
        // A key that is not a public key stops the server at once, saying why.
        #expect(throws: ServerProcess.StartFailure.self) { try ServerProcess(arguments: "--jwt-public-key \(base).pem") }
    }

    @Test func callsOnAServerWithKeysNeedTwiliosSignature() throws {
        let keyed = try ServerProcess(arguments: "--transcriber none --synthesizer none", environment: "PARLEY_API_KEY=sk-calls")
        let closed = try TestClient(port: keyed.port).upgradeResponse(path: "/twilio")
        #expect(closed.status == 403 && closed.body.contains("calls_not_configured"), "the one door without a key stays shut")
        let token = "twilio-token-\(getpid())"
        let signed = try ServerProcess(arguments: "--transcriber none --synthesizer none", environment: "PARLEY_API_KEY=sk-calls TWILIO_AUTH_TOKEN=\(token)")
        let url = "wss://localhost/twilio"
        let signature = Base64.encode(OpenSSL.hmacSHA1(key: Array(token.utf8), Array(url.utf8)))
        #expect(try TestClient(port: signed.port).upgrade(path: "/twilio", extraHeaders: "X-Twilio-Signature: \(signature)\r\n").status == 101)
        #expect(try TestClient(port: signed.port).upgrade(path: "/twilio", extraHeaders: "X-Twilio-Signature: \(signature.dropLast(2))AA\r\n").status == 403)
        #expect(try TestClient(port: signed.port).upgrade(path: "/twilio").status == 403)
    }

    @Test func keyDigestsMatchOnlyTheirKeys() {
        let keys = APIKeys(["sk-one", "sk-two"])
        #expect(keys.accepts("sk-one") && keys.accepts("sk-two"))
        #expect(!keys.accepts("sk-on") && !keys.accepts("sk-one ") && !keys.accepts("") && !keys.accepts("SK-ONE"))
        #expect(APIKeys.parse("# c\n a \n\nb\n#d\nacme sk-three\n") == [APIKeys.Entry(key: "a"), APIKeys.Entry(key: "b"), APIKeys.Entry(key: "sk-three", tenant: "acme")])
        // A key's tenant is its name in the file, or a digest prefix that does not reveal it.
        let named = APIKeys(entries: [APIKeys.Entry(key: "sk-three", tenant: "acme"), APIKeys.Entry(key: "sk-four")])
        #expect(named.tenant(of: "sk-three") == "acme")
        let anonymous = named.tenant(of: "sk-four") ?? ""
        #expect(anonymous.hasPrefix("key-") && anonymous.count == 12 && !anonymous.contains("four"))
        #expect(named.tenant(of: "sk-five") == nil)
    }
}

@Suite struct MetricsListenTests {
    @Test func metricsMoveToTheirOwnListener() throws {
        let process = try ServerProcess(arguments: "--metrics-listen 127.0.0.1:0")
        let line = process.listeningLine
        let metricsPort = try #require(line.split(separator: "metrics on 127.0.0.1:").dropFirst().first.flatMap { Int($0.prefix { $0.isNumber }) }, "\(line)")
        let main = try TestClient(port: process.port)
        try main.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try main.readResponse().status == 404)
        let metrics = try TestClient(port: metricsPort)
        try metrics.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try metrics.readResponse()
        #expect(response.status == 200 && response.body.contains("parley_connections_open{endpoint=\"realtime\"}"))
    }
}
