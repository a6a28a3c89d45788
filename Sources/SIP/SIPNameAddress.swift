/// A From, To, Contact, Route or Record-Route value (RFC 3261 section 20.10 and 25.1): an optional
/// display name, the URI, and the header's parameters (the tag among them).
package struct SIPNameAddress: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The display name with its quotes removed and quoted-pairs resolved; nil when there is none.
    package var displayName: String?
    package var uri: SIPURI
    package var parameters: [SIPParameter]

    package init(displayName: String? = nil, uri: SIPURI, parameters: [SIPParameter] = []) {
        self.displayName = displayName
        self.uri = uri
        self.parameters = parameters
    }

    /// The dialog's tag, from the `tag` parameter (section 19.3).
    package var tag: String? {
        get { parameters.value("tag") }
        set {
            if let newValue { parameters.set("tag", newValue) } else { parameters.removeAll { $0.name.lowercased() == "tag" } }
        }
    }

    /// `name-addr / addr-spec` followed by parameters. In the addr-spec form the URI ends at the
    /// first ';' (what follows is the header's, section 20.10), and may hold no ',' or '?'
    /// (RFC 4475 section 3.1.2.13). A display name is a quoted-string or tokens (section 3.1.2.15
    /// refuses a comma in one); the URI in brackets holds no white space (section 3.1.2.14).
    package init?(_ text: String) {
        var scanner = SIPScanner(text)
        scanner.skipWhitespace()
        var displayName: String?
        var uriText: String?
        if let quoted = scanner.quotedString() {
            displayName = SIPGrammar.unquote(quoted)
            scanner.skipWhitespace()
            guard scanner.peek() == UInt8(ascii: "<") else { return nil }
        } else {
            let start = scanner.index
            var words: [String] = []
            while let word = scanner.token() {
                words.append(word)
                scanner.skipWhitespace()
            }
            if scanner.peek() == UInt8(ascii: "<") {
                if !words.isEmpty { displayName = words.joined(separator: " ") }
            } else {
                scanner.index = start
                let spec = scanner.take { $0 != UInt8(ascii: ";") && $0 != 0x20 && $0 != 0x09 }
                guard !spec.utf8.contains(UInt8(ascii: ",")), !spec.utf8.contains(UInt8(ascii: "?")) else { return nil }
                uriText = spec
            }
        }
        if uriText == nil {
            scanner.index += 1  // the '<'
            let inner = scanner.take { $0 != UInt8(ascii: ">") }
            guard scanner.peek() == UInt8(ascii: ">") else { return nil }
            scanner.index += 1
            uriText = inner
        }
        guard let uriText, let uri = SIPURI(uriText), let parameters = scanner.genericParameters() else { return nil }
        scanner.skipWhitespace()
        guard scanner.atEnd else { return nil }
        self.init(displayName: displayName, uri: uri, parameters: parameters)
    }

    /// Always the name-addr form (section 20.10 requires it once the URI has ',', ';' or '?'),
    /// the display name quoted.
    package var description: String {
        (displayName.map { SIPGrammar.quote($0) + " " } ?? "") + "<\(uri)>" + parameters.text
    }
}
