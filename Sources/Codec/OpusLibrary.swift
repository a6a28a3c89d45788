import COpus

/// libopus as linked into this build. The codec itself arrives with the Codec issue; this proves
/// the system-library target resolves and links.
public enum OpusLibrary {
    public static var version: String { String(cString: opus_get_version_string()) }
}
