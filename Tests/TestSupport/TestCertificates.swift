import Glibc

/// Certificates made at test time with the openssl CLI, once per test process: a CA and a server
/// certificate it signed (for localhost and 127.0.0.1), and a second, unrelated CA with its own
/// server certificate, for the tests that must be refused or that swap certificates.
public struct TestCertificates: Sendable {
    public let directory: String
    public let caCertificate: String
    public let serverCertificate: String
    public let serverKey: String
    public let otherCACertificate: String
    public let otherServerCertificate: String
    public let otherServerKey: String

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Made on first use; every test shares them (they are only read).
    public static let shared: Result<TestCertificates, Failure> = Result { () throws(Failure) in try TestCertificates() }

    public static func get() throws -> TestCertificates { try shared.get() }

    private init() throws(Failure) {
        var template = Array("/tmp/parley-tls-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Failure(description: "mkdtemp failed") }
        directory = String(cString: made)
        caCertificate = "\(directory)/ca.pem"
        serverCertificate = "\(directory)/server.pem"
        serverKey = "\(directory)/server.key"
        otherCACertificate = "\(directory)/other-ca.pem"
        otherServerCertificate = "\(directory)/other-server.pem"
        otherServerKey = "\(directory)/other-server.key"
        try makeCA(name: "ca", subject: "/CN=Parley Test CA")
        try makeServer(name: "server", signedBy: "ca")
        try makeCA(name: "other-ca", subject: "/CN=Some Other CA")
        try makeServer(name: "other-server", signedBy: "other-ca")
    }

    private func makeCA(name: String, subject: String) throws(Failure) {
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(directory)/\(name).key"])
        try openssl(["req", "-x509", "-new", "-key", "\(directory)/\(name).key", "-subj", subject, "-days", "2",
                     "-out", "\(directory)/\(name).pem"])
    }

    private func makeServer(name: String, signedBy ca: String) throws(Failure) {
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(directory)/\(name).key"])
        try openssl(["req", "-new", "-key", "\(directory)/\(name).key", "-subj", "/CN=localhost",
                     "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-out", "\(directory)/\(name).csr"])
        try openssl(["x509", "-req", "-in", "\(directory)/\(name).csr", "-CA", "\(directory)/\(ca).pem",
                     "-CAkey", "\(directory)/\(ca).key", "-CAcreateserial", "-copy_extensions", "copyall", "-days", "2",
                     "-out", "\(directory)/\(name).pem"])
    }

    private func openssl(_ arguments: [String]) throws(Failure) {
        let status: Int32
        do { status = try Subprocess.run(["openssl"] + arguments, quiet: true) } catch {
            throw Failure(description: "openssl: \(error)")
        }
        guard status == 0 else { throw Failure(description: "openssl \(arguments.prefix(2).joined(separator: " ")) exited with \(status)") }
    }
}
