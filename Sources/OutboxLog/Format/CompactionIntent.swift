/// The commit record of a compaction (or a salvage rewrite).
///
/// Written to `COMPACTION.tmp`, synced, renamed to `COMPACTION` and the
/// directory synced: that rename is the commit point. Once it exists,
/// recovery *finishes* the swap (outputs renamed into place, inputs deleted
/// or moved to `damaged/`); without it, recovery deletes the partial outputs.
/// Inputs and outputs are identified by base *and* salt, so finishing is
/// idempotent even when an output takes an input's name.
///
/// ```
/// offset size field
///      0    8 magic "OBXCMPT\n"
///      8    2 format version (1)
///     10    2 flags: bit 0 = move inputs to damaged/ instead of deleting
///     12    4 input count n
///     16    4 output count m
///     20 16·n inputs:  base sequence (8), salt (8)
///      … 16·m outputs: base sequence (8), salt (8)
///      …    4 CRC-32 of everything before
/// ```
package struct CompactionIntent: Sendable, Hashable {
    package struct SegmentIdentity: Sendable, Hashable {
        var base: UInt64
        var salt: UInt64

        package init(base: UInt64, salt: UInt64) {
            self.base = base
            self.salt = salt
        }
    }

    static let magic: [UInt8] = Array("OBXCMPT\n".utf8)
    static let currentVersion: UInt16 = 1
    static let setAsideFlag: UInt16 = 1

    var inputs: [SegmentIdentity]
    var outputs: [SegmentIdentity]
    /// Salvage: move inputs to `damaged/` rather than deleting them.
    var setAsideInputs: Bool

    package init(inputs: [SegmentIdentity], outputs: [SegmentIdentity], setAsideInputs: Bool) {
        self.inputs = inputs
        self.outputs = outputs
        self.setAsideInputs = setAsideInputs
    }

    package func encoded() -> [UInt8] {
        var bytes = Self.magic
        bytes.appendLittleEndian(Self.currentVersion)
        bytes.appendLittleEndian(setAsideInputs ? Self.setAsideFlag : 0)
        bytes.appendLittleEndian(UInt32(inputs.count))
        bytes.appendLittleEndian(UInt32(outputs.count))
        for segment in inputs + outputs {
            bytes.appendLittleEndian(segment.base)
            bytes.appendLittleEndian(segment.salt)
        }
        bytes.appendLittleEndian(CRC32.checksum(bytes))
        return bytes
    }

    package enum DecodeError: Error, Equatable {
        case corrupt(CompactionIntentDamage)
        case unsupportedVersion(UInt16)
    }

    package static func decode(_ bytes: [UInt8]) -> Result<CompactionIntent, DecodeError> {
        bytes.withUnsafeBytes { raw in
            guard raw.count >= 24, raw.prefix(8).elementsEqual(magic) else { return .failure(.corrupt(.badMagic)) }
            let stored: UInt32 = raw.loadLittleEndian(at: raw.count - 4)
            guard stored == CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[..<(raw.count - 4)])) else {
                return .failure(.corrupt(.crcMismatch))
            }
            let version: UInt16 = raw.loadLittleEndian(at: 8)
            guard version == currentVersion else { return .failure(.unsupportedVersion(version)) }
            let flags: UInt16 = raw.loadLittleEndian(at: 10)
            let inputCount = Int(clamping: raw.loadLittleEndian(at: 12, as: UInt32.self))
            let outputCount = Int(clamping: raw.loadLittleEndian(at: 16, as: UInt32.self))
            guard flags & ~setAsideFlag == 0, inputCount <= raw.count / 16, outputCount <= raw.count / 16,
                20 + 16 * (inputCount + outputCount) + 4 == raw.count
            else {
                return .failure(.corrupt(.inconsistent))
            }
            var segments: [SegmentIdentity] = []
            for i in 0..<(inputCount + outputCount) {
                let at = 20 + 16 * i
                segments.append(SegmentIdentity(base: raw.loadLittleEndian(at: at), salt: raw.loadLittleEndian(at: at + 8)))
            }
            return .success(
                CompactionIntent(
                    inputs: Array(segments[..<inputCount]), outputs: Array(segments[inputCount...]),
                    setAsideInputs: flags & setAsideFlag != 0))
        }
    }
}
