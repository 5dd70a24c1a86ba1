import Testing

@testable import OutboxLog

/// `String(checkedUTF8:)` accepts exactly the valid UTF-8 byte strings,
/// whichever collection holds them: an array, a slice of one (both
/// contiguous: the fast comparison) or a collection without contiguous
/// storage (the element-by-element one).
@Suite("Checked UTF-8")
struct CheckedUTF8Tests {
    static let valid: [[UInt8]] = [
        [], Array("plain ascii".utf8), Array("déjà vu — 東京 🚀".utf8), [0x00], [0xF4, 0x8F, 0xBF, 0xBF],
    ]
    static let invalid: [[UInt8]] = [
        [0xFF], [0x80], [0xE2, 0x82],  // a lone continuation, a cut sequence
        [0xC0, 0xAF], [0xE0, 0x80, 0xAF],  // overlong encodings of "/"
        [0xED, 0xA0, 0x80],  // a UTF-16 surrogate
        [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
        Array("ok".utf8) + [0xEF, 0xBF],  // valid, then cut short
        [0xEF, 0xBF, 0xBD, 0xFF],  // U+FFFD itself, then an invalid byte
    ]

    @Test("valid UTF-8 decodes to the same string in every kind of collection", arguments: valid)
    func validBytes(_ bytes: [UInt8]) {
        let expected = String(decoding: bytes, as: UTF8.self)
        #expect(String(checkedUTF8: bytes) == expected)
        #expect(String(checkedUTF8: ([0x41] + bytes + [0x42]).dropFirst().dropLast()) == expected)
        #expect(String(checkedUTF8: AnyCollection(bytes)) == expected)
    }

    @Test("invalid UTF-8 is refused in every kind of collection", arguments: invalid)
    func invalidBytes(_ bytes: [UInt8]) {
        #expect(String(checkedUTF8: bytes) == nil)
        #expect(String(checkedUTF8: ([0x41] + bytes + [0x42]).dropFirst().dropLast()) == nil)
        #expect(String(checkedUTF8: AnyCollection(bytes)) == nil)
    }
}
