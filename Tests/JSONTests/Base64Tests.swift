import Testing
@testable import JSON

@Suite struct Base64Tests {
    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")])
    func roundTripsRFC4648Vectors(_ plain: String, _ encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(Array(encoded.utf8)) == Array(plain.utf8))
    }

    @Test(arguments: ["Zg=", "Z===", "Zm9v!A==", "=Zm9", "Zg==Zg=="])
    func refusesMalformedInput(_ text: String) {
        #expect(Base64.decode(Array(text.utf8)) == nil)
    }
}
