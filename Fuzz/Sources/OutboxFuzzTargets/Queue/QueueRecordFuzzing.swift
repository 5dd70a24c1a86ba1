import OutboxQueue

/// Fuzz entry point for the durable queue's records (Docs/STORE-FORMAT.md,
/// "The durable queue's records"): the first byte picks an element's
/// payload (even) or a consumer's commit record (odd), the rest is the
/// record. See `FuzzViolation` and Fuzz/README.md.
///
/// What decodes must be what the bytes say: an element's header and bytes
/// put back together are the payload, and a commit's position encodes back
/// to exactly its record.
package enum QueueRecordFuzzing {
    package static func record(_ input: UnsafeRawBufferPointer) throws(FuzzViolation) {
        guard let input = FuzzInput(input) else { return }
        let bytes = Array(input.data)
        if input.control & 1 == 0 {
            guard let (milliseconds, element) = ElementRecord.split(bytes) else {
                if bytes.count >= ElementRecord.headerSize { throw FuzzViolation("a payload of \(bytes.count) bytes was refused") }
                return
            }
            guard ElementRecord.header(milliseconds) + element == bytes else {
                throw FuzzViolation("an element read as time \(milliseconds) and \(element.count) bytes is not its payload")
            }
        } else {
            guard let position = ConsumerOffsets.position(bytes) else { return }
            guard ConsumerOffsets.encode(position) == bytes else {
                throw FuzzViolation("a commit read as position \(position) encodes to other bytes")
            }
        }
    }

    /// Elements of each shape behind control byte 0, commits behind 1.
    package static func seeds() -> [[UInt8]] {
        let elements: [[UInt8]] = [
            ElementRecord.header(1_700_000_000_000) + Array("signed-in".utf8),
            ElementRecord.header(0),
            ElementRecord.header(-1) + [0x00, 0xFF, 0x0A],
            ElementRecord.header(.max) + Array(#"{"event":"paid"}"#.utf8),
        ]
        let commits = [0, 5, UInt64.max].map(ConsumerOffsets.encode)
        return elements.map { [0] + $0 } + commits.map { [1] + $0 }
    }
}
