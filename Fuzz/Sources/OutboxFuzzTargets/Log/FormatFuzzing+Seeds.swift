import OutboxLog
/// Seed inputs for the format fuzz targets: one valid encoding of each kind
/// of frame, header and intent, behind control byte 0 (decode as is). The
/// checked-in corpus (Fuzz/corpus) starts from these.
extension LogFormatFuzzing {
    package static func frameSeeds() -> [[UInt8]] {
        func frame(
            _ kind: FrameKind, key: LogKey = "", payload: [UInt8] = [], continues: Bool = false, continuation: Bool = false,
            sequence: UInt64 = 7, watermark: UInt64 = 6, expiry: Int64? = nil
        ) -> [UInt8] {
            var bytes: [UInt8] = [0]
            payload.withUnsafeBytes { payload in
                RecordFrame.append(
                    to: &bytes, crcSeed: frameCRCSeed, kind: kind, batchContinues: continues,
                    batchContinuation: continuation, sequence: sequence, durableWatermark: watermark, key: key,
                    payload: payload, expiry: expiry)
            }
            return bytes
        }
        return [
            frame(.value, key: "user/42", payload: Array("hello, world".utf8)),
            frame(.annotation, key: "user/42", payload: [2, 0, 1]),
            frame(.value, key: "key/7", payload: [9, 9], expiry: 1_767_225_600_000),
            frame(.annotation, key: "key/7", payload: [1], expiry: -1),
            frame(.tombstone, key: "user/42"),
            frame(.marker),
            frame(.value, key: "a", payload: [1], continues: true),
            frame(.value, key: "b", payload: [2], continuation: true),
            frame(.value, key: LogKey([UInt8](repeating: 0x6B, count: LogKey.maximumLength)), payload: [UInt8](repeating: 0x76, count: 300)),
        ]
    }

    package static func headerSeeds() -> [[UInt8]] {
        let appended = SegmentHeader(baseSequence: 1, coverEnd: nil, salt: 0x0123_4567_89AB_CDEF).encoded()
        let rewritten = SegmentHeader(baseSequence: 100, coverEnd: 250, salt: 0xFEDC_BA98_7654_3210).encoded()
        // A header a newer version might write: grown to 56 bytes, its CRC last.
        var grown = Array(appended[..<44]) + [UInt8](repeating: 0, count: 8)
        grown.withUnsafeMutableBytes {
            $0.storeLittleEndian(SegmentHeader.currentVersion + 1, at: 8)
            $0.storeLittleEndian(UInt16(56), at: 10)
        }
        grown.appendLittleEndian(CRC32.checksum(grown))
        return [[0] + appended, [0] + rewritten, [0] + grown]
    }

    package static func intentSeeds() -> [[UInt8]] {
        typealias Segment = CompactionIntent.SegmentIdentity
        let compaction = CompactionIntent(
            inputs: [Segment(base: 1, salt: 11), Segment(base: 40, salt: 12), Segment(base: 90, salt: 13)],
            outputs: [Segment(base: 1, salt: 21)], setAsideInputs: false)
        let salvage = CompactionIntent(
            inputs: [Segment(base: 5, salt: 31)], outputs: [Segment(base: 5, salt: 41), Segment(base: 60, salt: 42)],
            setAsideInputs: true)
        return [[0] + compaction.encoded(), [0] + salvage.encoded()]
    }
}
