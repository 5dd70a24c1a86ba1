/// Lowercase hexadecimal, the form of every name the store derives from
/// bytes (queue directories, spools, payload files).
///
/// Decoding works on the name's UTF-8 bytes, never on its characters: a
/// name read from a directory is hostile until decoded, and a multi-byte
/// character must make it "not ours", not move an index past its end.
enum LowercaseHex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// `bytes` as lowercase hex, two digits each.
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var utf8: [UInt8] = []
        utf8.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            utf8.append(digits[Int(byte >> 4)])
            utf8.append(digits[Int(byte & 15)])
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    /// The bytes `text` spells in lowercase hex, if it is exactly `count`
    /// bytes' worth (any count if `nil`); `nil` for anything else.
    static func decode(_ text: some StringProtocol, count: Int? = nil) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0, count.map({ utf8.count == 2 * $0 }) ?? true else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
