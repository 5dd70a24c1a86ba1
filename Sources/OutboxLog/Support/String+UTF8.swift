extension String {
    /// The string `bytes` spell in UTF-8, or `nil` if they are not valid
    /// UTF-8. The standard library's `String(validating:as:)` needs macOS 15 /
    /// iOS 18, above this package's floor (macOS 13 / iOS 16): decoding
    /// replaces every invalid sequence with U+FFFD, so the input was valid
    /// exactly when the decoded string encodes back to the same bytes.
    package init?(checkedUTF8 bytes: some Collection<UInt8>) {
        let decoded = String(decoding: bytes, as: UTF8.self)
        guard decoded.utf8.elementsEqual(bytes) else { return nil }
        self = decoded
    }
}
