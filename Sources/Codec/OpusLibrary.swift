/// libopus as linked into this build.
public enum OpusLibrary {
    public static var version: String { LibOpus.version }
}
