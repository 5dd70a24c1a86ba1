import OutboxLog
import OutboxModel

/// Seals a payload file chunk by chunk under the queue's record-sealing key
/// (``RecordSealer``, purpose ``RecordSealer/Purpose/payloadChunk``), so a
/// 50 MB body is never held twice in memory and can be streamed.
///
/// Each chunk is its own AES-GCM box (random nonce, 16-byte tag) whose
/// associated data binds it to its entry and its place: the partition, the
/// entry's log key, the file's random id, the chunk's index, and whether it
/// is the last. So a chunk moved within the file, copied from another file
/// (of this entry or another), or a file cut after a chunk boundary, fails
/// to open — a file can only give back the body sealed for that entry.
struct PayloadFileCipher: Sendable {
    let sealer: RecordSealer
    let partition: String
    /// The entry's log key (a keyed hash of its id in a sealed queue).
    let entryKey: LogKey
    let fileID: [UInt8]

    func seal(_ chunk: some Collection<UInt8>, index: Int, isLast: Bool) throws(OutboxError) -> [UInt8] {
        try sealer.seal(Array(chunk), .payloadChunk, partition: partition, binding: binding(index, isLast))
    }

    /// The chunk's plaintext, or `nil` if the box does not open here.
    func open(_ box: some Collection<UInt8>, index: Int, isLast: Bool) -> [UInt8]? {
        try? sealer.open(box, .payloadChunk, partition: partition, binding: binding(index, isLast))
    }

    private func binding(_ index: Int, _ isLast: Bool) -> [UInt8] {
        var bytes = entryKey.bytes + fileID
        withUnsafeBytes(of: UInt64(index).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(isLast ? 1 : 0)
        return bytes
    }
}
