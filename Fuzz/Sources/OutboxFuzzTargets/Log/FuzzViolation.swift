import OutboxLog
/// What a fuzz target found: a decoder's output that differs from what the
/// checksum vouches for (or breaks a rule of the format). Crashes, traps and
/// memory errors are findings too, but those the sanitizers report.
///
/// The entry points that throw it (``LogFormatFuzzing``,
/// ``LogSegmentFuzzing``, and the entry codec's in `Outbox`) exist for the
/// fuzz targets in `Fuzz/` and the corpus replay test; they have `package`
/// access, so they are no part of the library's API.
package struct FuzzViolation: Error, CustomStringConvertible {
    package var description: String

    package init(_ description: String) { self.description = description }
}

/// The first byte of a fuzz input steers the target; the rest is the data.
package struct FuzzInput {
    package var control: UInt8
    package var data: UnsafeRawBufferPointer

    /// `nil` for an empty input.
    package init?(_ input: UnsafeRawBufferPointer) {
        guard let first = input.first else { return nil }
        control = first
        // A slice up to the input's end: a read past `data` is a read past
        // the fuzzer's allocation, which AddressSanitizer reports.
        data = UnsafeRawBufferPointer(rebasing: input.dropFirst())
    }

    package func flag(_ bit: Int) -> Bool { control & (1 << bit) != 0 }
}

/// Runs `body` on an exactly sized, mutable copy of `data` (freed after it
/// returns), for targets that repair checksums before decoding so that
/// mutations reach the code behind the CRC check.
package func withMutableCopy<R>(
    of data: UnsafeRawBufferPointer, _ body: (UnsafeMutableRawBufferPointer) throws(FuzzViolation) -> R
) throws(FuzzViolation) -> R {
    let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: data.count, alignment: 8)
    defer { copy.deallocate() }
    copy.copyMemory(from: data)
    return try body(copy)
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` for a body that throws only ``FuzzViolation``.
    package func withFuzzBytes<R>(_ body: (UnsafeRawBufferPointer) throws(FuzzViolation) -> R) throws(FuzzViolation) -> R {
        try withUnsafeBytes { raw in Result { () throws(FuzzViolation) -> R in try body(raw) } }.get()
    }
}
