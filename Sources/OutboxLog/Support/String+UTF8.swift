extension String {
    /// The string `bytes` spell in UTF-8, or `nil` if they are not valid
    /// UTF-8. The standard library's `String(validating:as:)` needs macOS 15 /
    /// iOS 18, above this package's floor (macOS 13 / iOS 16): decoding
    /// replaces every invalid sequence with U+FFFD, so the input was valid
    /// exactly when the decoded string encodes back to the same bytes.
    ///
    /// Inlinable so that each caller gets it specialized for its collection:
    /// called across the module boundary unspecialized, the comparison ran
    /// byte by byte through generic witnesses, and decoding entry headers
    /// with it took a fifth of a drain's CPU (Docs/BENCHMARKS.md).
    @inlinable
    package init?(checkedUTF8 bytes: some Collection<UInt8>) {
        let decoded = String(decoding: bytes, as: UTF8.self)
        let same =
            bytes.withContiguousStorageIfAvailable { raw in
                decoded.utf8.withContiguousStorageIfAvailable { text in text.elementsEqual(raw) }
            } ?? nil
        guard same ?? decoded.utf8.elementsEqual(bytes) else { return nil }
        self = decoded
    }
}
