import OutboxLog

/// One test vector: a log directory's bytes and what it shows.
struct VectorCase: Sendable {
    var name: String
    var summary: String
    var files: @Sendable () async throws -> VectorFiles
}

/// Every test vector, by kind: clean logs, interrupted compactions, torn
/// tails, damaged frames and headers, batches, and the segment chain.
/// Each starts from a log the engine wrote (``VectorLogs``) and changes
/// bytes as Docs/FORMAT.md lays them out; "resealed" means the CRC was made
/// valid again, so only the rule under test can catch the change.
enum VectorCases {
    static var all: [VectorCase] { clean + compaction + tornTails + frames + headers + batches + chain }

    // MARK: Helpers

    static func standard() async throws -> VectorFiles { VectorLogs.canonical(try await VectorLogs.standard()) }
    static func multi() async throws -> VectorFiles { VectorLogs.canonical(try await VectorLogs.multiSegment()) }

    static func segments(_ files: VectorFiles) -> [String] { files.keys.filter { $0.hasSuffix(".seg") }.sorted() }

    /// `files` with segment `name` parsed, edited and encoded again (every CRC valid).
    static func resealed(_ files: VectorFiles, _ name: String, _ edit: (inout VectorSegment) -> Void) -> VectorFiles {
        var files = files
        var segment = VectorSegment(parsing: files[name]!)
        edit(&segment)
        files[name] = segment.encoded()
        return files
    }

    /// `files` with the bytes of `name` changed by `edit` (CRCs left as they are).
    static func patched(_ files: VectorFiles, _ name: String, _ edit: (inout [UInt8]) -> Void) -> VectorFiles {
        var files = files
        edit(&files[name]!)
        return files
    }

    static func frameIndex(_ segment: VectorSegment, key: String) -> Int {
        segment.frames.firstIndex { $0.key == Array(key.utf8) }!
    }

    /// The offset of the frame of `key` in the only (or the named) segment.
    static func offset(of key: String, in bytes: [UInt8]) -> Int {
        let segment = VectorSegment(parsing: bytes)
        return segment.offset(ofFrame: frameIndex(segment, key: key))
    }

    /// Flips `mask` in byte `delta` of the frame of `key`.
    static func flipping(_ files: VectorFiles, key: String, at delta: Int, mask: UInt8 = 0x10) -> VectorFiles {
        let name = segments(files).last { offsetOrNil(of: key, in: files[$0]!) != nil }!
        return patched(files, name) { $0[offset(of: key, in: $0) + delta] ^= mask }
    }

    static func offsetOrNil(of key: String, in bytes: [UInt8]) -> Int? {
        let segment = VectorSegment(parsing: bytes)
        return segment.frames.firstIndex { $0.key == Array(key.utf8) }.map { segment.offset(ofFrame: $0) }
    }

    /// Edits the frame of `key` in the standard log and reseals it.
    static func standardFrame(_ key: String, _ edit: @escaping @Sendable (inout VectorSegment.Frame) -> Void) -> @Sendable () async throws -> VectorFiles {
        {
            let files = try await standard()
            return resealed(files, segments(files)[0]) { segment in edit(&segment.frames[frameIndex(segment, key: key)]) }
        }
    }

    // MARK: Clean logs

    static let clean: [VectorCase] = [
        VectorCase(name: "clean-one-segment", summary: "values, annotations, a tombstone, a batch, a binary key, an overwrite; closed cleanly") {
            try await standard()
        },
        VectorCase(name: "clean-multi-segment", summary: "83 records over several 4 KiB segments") { try await multi() },
        VectorCase(name: "clean-compacted", summary: "sealed segments rewritten by compaction (rewritten flag, cover end, gaps in sequence numbers)") {
            let before = try await VectorLogs.beforeCompaction()
            return VectorLogs.canonical(try await VectorLogs.afterCompaction(before))
        },
        VectorCase(name: "clean-compacted-everything", summary: "every key deleted, then compacted: placeholders keep the sequence floor") {
            let files = try await VectorLogs.write(startingFrom: try await VectorLogs.multiSegment()) { log in
                for index in 0..<80 { try await log.delete(LogKey("key-\(index)"), durability: .durable) }
                for index in 0..<3 { try await log.delete(LogKey("batch-\(index)"), durability: .durable) }
                _ = try await log.compact()
            }
            return VectorLogs.canonical(files)
        },
        VectorCase(name: "clean-empty-log", summary: "a log opened and closed with nothing in it") {
            VectorLogs.canonical(try await VectorLogs.write { _ in })
        },
        VectorCase(name: "clean-unknown-file", summary: "a file the format does not name is ignored") {
            var files = try await standard()
            files["notes.txt"] = Array("not part of the log\n".utf8)
            return files
        },
        VectorCase(name: "clean-temporary-files", summary: "leftover .tmp files: reported as removed (a read-only open leaves them)") {
            var files = try await standard()
            files[VectorBytes.segmentName(99) + ".tmp"] = Array(files[segments(files)[0]]!.prefix(48))
            files["COMPACTION.tmp"] = Array("OBXCMPT\n".utf8)
            return files
        },
    ]

    // MARK: Interrupted compaction

    /// The files before a compaction (A), after it (B), and what changed:
    /// inputs (in A, not in B as they were), outputs (in B, not in A), and
    /// the segment the compaction's roll created (newest in B, not in A).
    struct CompactionStates {
        var before: VectorFiles
        var after: VectorFiles
        var inputs: [String]
        var outputs: [String]
        var rolled: String

        static func make() async throws -> CompactionStates {
            let rawBefore = try await VectorLogs.beforeCompaction()
            let rawAfter = try await VectorLogs.afterCompaction(rawBefore)
            let before = VectorLogs.canonical(rawBefore)
            var after = VectorLogs.canonical(rawAfter, generation: 2)
            for (name, bytes) in rawAfter where rawBefore[name] == bytes { after[name] = before[name] }
            let changedInAfter = segments(after).filter { after[$0] != before[$0] }
            let rolled = changedInAfter.last!
            return CompactionStates(
                before: before, after: after, inputs: segments(before).filter { after[$0] != before[$0] },
                outputs: changedInAfter.filter { $0 != rolled }, rolled: rolled)
        }

        func identity(_ bytes: [UInt8]) -> (UInt64, UInt64) { (VectorBytes.load(bytes, at: 16), VectorBytes.load(bytes, at: 32)) }

        var intent: [UInt8] {
            VectorBytes.intent(inputs: inputs.map { identity(before[$0]!) }, outputs: outputs.map { identity(after[$0]!) })
        }

        /// Step 1: outputs written as `.compacting`, nothing committed.
        var outputsWritten: VectorFiles {
            var files = before
            files[rolled] = after[rolled]
            for output in outputs { files[output + ".compacting"] = after[output] }
            return files
        }
    }

    static let compaction: [VectorCase] = [
        VectorCase(name: "compaction-1-outputs-written", summary: "outputs written as .compacting, no intent: rolled back") {
            try await CompactionStates.make().outputsWritten
        },
        VectorCase(name: "compaction-2-intent-being-written", summary: "COMPACTION.tmp exists, COMPACTION does not: rolled back") {
            let states = try await CompactionStates.make()
            var files = states.outputsWritten
            files["COMPACTION.tmp"] = states.intent
            return files
        },
        VectorCase(name: "compaction-3-committed", summary: "COMPACTION written, nothing swapped yet: completed") {
            let states = try await CompactionStates.make()
            var files = states.outputsWritten
            files["COMPACTION"] = states.intent
            return files
        },
        VectorCase(name: "compaction-4-inputs-deleted", summary: "committed, inputs deleted, outputs not yet renamed: completed") {
            let states = try await CompactionStates.make()
            var files = states.outputsWritten
            files["COMPACTION"] = states.intent
            for input in states.inputs { files[input] = nil }
            return files
        },
        VectorCase(name: "compaction-5-outputs-renamed", summary: "committed and swapped, COMPACTION not yet deleted: completed") {
            let states = try await CompactionStates.make()
            var files = states.after
            files["COMPACTION"] = states.intent
            return files
        },
        VectorCase(name: "compaction-output-missing", summary: "a committed intent names an output that is nowhere: the open fails") {
            let states = try await CompactionStates.make()
            var files = states.outputsWritten
            files["COMPACTION"] = states.intent
            files[states.outputs[0] + ".compacting"] = nil
            return files
        },
        VectorCase(name: "compaction-intent-damaged", summary: "a COMPACTION whose CRC fails: verify reports it and reads the segments as they are") {
            let states = try await CompactionStates.make()
            var files = states.outputsWritten
            files["COMPACTION"] = states.intent
            files["COMPACTION"]![21] ^= 0x01
            return files
        },
        VectorCase(name: "compaction-intent-version-2", summary: "a valid COMPACTION of an unknown version: the open is refused") {
            let states = try await CompactionStates.make()
            var files = states.outputsWritten
            files["COMPACTION"] = VectorBytes.intent(inputs: [], outputs: [], version: 2)
            return files
        },
    ]

    // MARK: Torn tails

    static let tornTails: [VectorCase] = [
        VectorCase(name: "torn-tail-partial-frame", summary: "the file ends inside the last record (and its marker is gone)") {
            let files = try await standard()
            return patched(files, segments(files)[0]) { $0 = Array($0[..<(offset(of: "tail-2", in: $0) + 31)]) }
        },
        VectorCase(name: "torn-tail-partial-frame-header", summary: "the file ends inside the last record's 28-byte header") {
            let files = try await standard()
            return patched(files, segments(files)[0]) { $0 = Array($0[..<(offset(of: "tail-2", in: $0) + 5)]) }
        },
        VectorCase(name: "torn-tail-in-batch", summary: "the file ends inside a batch: cut at the batch's first record") {
            let files = VectorLogs.canonical(try await VectorLogs.endingInBatch())
            return patched(files, segments(files)[0]) { $0 = Array($0[..<(offset(of: "batch-1", in: $0) + 40)]) }
        },
        VectorCase(name: "torn-tail-unreachable-records", summary: "bad bytes followed by records whose watermarks do not vouch for them") {
            let files = VectorLogs.canonical(try await VectorLogs.unsynced())
            return patched(files, segments(files)[0]) { bytes in
                bytes.removeLast(28)  // the close's marker
                bytes[offset(of: "key-5", in: bytes) + 30] ^= 0x01
            }
        },
        VectorCase(name: "torn-tail-unreachable-marker", summary: "as above, with a marker after them whose watermark does not vouch either (resealed): not counted as a record") {
            let files = VectorLogs.canonical(try await VectorLogs.unsynced())
            let name = segments(files)[0]
            let resealedFiles = resealed(files, name) { segment in
                segment.frames[segment.frames.count - 1].watermark = segment.frames[0].sequence + 2
            }
            return patched(resealedFiles, name) { $0[offset(of: "key-5", in: $0) + 30] ^= 0x01 }
        },
        VectorCase(name: "torn-tail-marker", summary: "the file ends inside the closing marker") {
            let files = try await standard()
            return patched(files, segments(files)[0]) { $0.removeLast(10) }
        },
    ]

    // MARK: Damaged frames

    static let frames: [VectorCase] = [
        VectorCase(name: "frame-crc", summary: "a record's CRC field changed (a later marker vouches for it: damage)") {
            flipping(try await standard(), key: "key-4", at: 1)
        },
        VectorCase(name: "frame-length-implausible", summary: "a length field over 1 GiB") {
            let files = try await standard()
            return patched(files, segments(files)[0]) { $0[offset(of: "key-4", in: $0) + 7] = 0xF0 }
        },
        VectorCase(name: "frame-length-changed", summary: "a length field one larger (the CRC then fails)") {
            flipping(try await standard(), key: "key-4", at: 4, mask: 0x01)
        },
        VectorCase(name: "frame-kind-unknown", summary: "kind 9, resealed", files: standardFrame("key-4") { $0.kind = 9 }),
        VectorCase(name: "frame-flags-unknown", summary: "flag bit 2, resealed", files: standardFrame("key-4") { $0.flags = 4 }),
        VectorCase(name: "frame-key-too-long", summary: "a 1,025-byte key, resealed", files: standardFrame("key-4") {
            $0.key = [UInt8](repeating: UInt8(ascii: "k"), count: 1025)
        }),
        VectorCase(name: "frame-key-1024", summary: "a 1,024-byte key: valid", files: standardFrame("key-4") {
            $0.key = [UInt8](repeating: UInt8(ascii: "k"), count: 1024)
        }),
        VectorCase(name: "frame-key-empty", summary: "a value with an empty key, resealed", files: standardFrame("key-4") { $0.key = [] }),
        VectorCase(name: "frame-tombstone-with-payload", summary: "a tombstone carrying a payload, resealed") {
            let files = try await standard()
            return resealed(files, segments(files)[0]) { segment in
                segment.frames[segment.frames.firstIndex { $0.kind == 3 }!].payload = [1]
            }
        },
        VectorCase(name: "frame-marker-with-key", summary: "the closing marker with a key, resealed: nothing follows, so a torn tail") {
            let files = try await standard()
            return resealed(files, segments(files)[0]) { $0.frames[$0.frames.count - 1].key = Array("x".utf8) }
        },
        VectorCase(name: "frame-sequence-repeated", summary: "a record numbered like the one before it, resealed") {
            let files = try await standard()
            return resealed(files, segments(files)[0]) { segment in
                let index = frameIndex(segment, key: "key-5")
                segment.frames[index].sequence = segment.frames[index - 1].sequence
            }
        },
        VectorCase(name: "frame-sequence-jump", summary: "a record numbered 10 too high, resealed", files: standardFrame("key-5") { $0.sequence += 10 }),
        VectorCase(name: "frame-watermark", summary: "a watermark bit flipped (the CRC fails)") {
            flipping(try await standard(), key: "key-4", at: 21, mask: 0x01)
        },
        VectorCase(name: "frame-payload", summary: "a payload bit flipped") {
            flipping(try await standard(), key: "key-4", at: 28 + 5 + 3)
        },
        VectorCase(name: "frame-in-sealed-segment", summary: "a bit flipped in a segment that is not the newest") {
            flipping(try await multi(), key: "key-3", at: 40)
        },
        VectorCase(name: "frame-cut-in-sealed-segment", summary: "a sealed segment that ends inside a record") {
            let files = try await multi()
            return patched(files, segments(files)[0]) { $0.removeLast(20) }
        },
    ]

    // MARK: Damaged headers (the second of several segments)

    static func header(_ edit: @escaping @Sendable (inout [UInt8]) -> Void, reseal: Bool) -> @Sendable () async throws -> VectorFiles {
        {
            let files = try await multi()
            return patched(files, segments(files)[1]) { bytes in
                edit(&bytes)
                if reseal {
                    let size = Int(VectorBytes.load(bytes, at: 10) as UInt16)
                    VectorBytes.store(VectorBytes.crc32(bytes[0..<(size - 4)]), into: &bytes, at: size - 4)
                }
            }
        }
    }

    static let headers: [VectorCase] = [
        VectorCase(name: "header-magic", summary: "a magic byte changed", files: header({ $0[3] ^= 0x20 }, reseal: true)),
        VectorCase(name: "header-version-flipped", summary: "the version changed, CRC not: damage, not a newer version", files: header({ $0[8] = 2 }, reseal: false)),
        VectorCase(name: "header-version-2", summary: "version 2 with a valid CRC: the open is refused, nothing changed", files: header({ $0[8] = 2 }, reseal: true)),
        VectorCase(name: "header-grown-version-2", summary: "a 56-byte version-2 header, CRC in its last 4 bytes: refused as unsupported", files: header({ bytes in
            bytes[8] = 2
            bytes[10] = 56
            bytes.insert(contentsOf: [UInt8](repeating: 0, count: 8), at: 44)
        }, reseal: true)),
        VectorCase(name: "header-version-1-size-56", summary: "a version-1 header declaring 56 bytes, CRC at 52: damage", files: header({ bytes in
            bytes[10] = 56
            bytes.insert(contentsOf: [UInt8](repeating: 0, count: 8), at: 44)
        }, reseal: true)),
        VectorCase(name: "header-size-flipped", summary: "the header size field changed (its CRC then fails)", files: header({ $0[10] ^= 0x01 }, reseal: false)),
        VectorCase(name: "header-flags-unknown", summary: "flag bit 1, resealed", files: header({ $0[12] = 2 }, reseal: true)),
        VectorCase(name: "header-base-mismatch", summary: "a base other than the file name's, resealed", files: header({ $0[16] &+= 1 }, reseal: true)),
        VectorCase(name: "header-cover-end-appended", summary: "a cover end on an appended segment, resealed", files: header({ $0[24] = 1 }, reseal: true)),
        VectorCase(name: "header-cover-end-before-base", summary: "a rewritten segment whose cover end is before its base, resealed", files: header({ bytes in
            bytes[12] = 1
            VectorBytes.store(UInt64(1), into: &bytes, at: 24)
        }, reseal: true)),
        VectorCase(name: "header-salt-zero", summary: "a zero salt, resealed", files: header({ bytes in
            VectorBytes.store(UInt64(0), into: &bytes, at: 32)
        }, reseal: true)),
        VectorCase(name: "header-reserved", summary: "a non-zero reserved field, resealed", files: header({ $0[41] = 1 }, reseal: true)),
        VectorCase(name: "header-crc", summary: "the header CRC changed", files: header({ $0[45] ^= 0x01 }, reseal: false)),
        VectorCase(name: "header-truncated", summary: "a segment file of 20 bytes", files: header({ $0 = Array($0[..<20]) }, reseal: false)),
        VectorCase(name: "header-newest-torn", summary: "the newest segment cut inside its header: damage, never a torn tail") {
            let files = try await multi()
            return patched(files, segments(files).last!) { $0 = Array($0[..<30]) }
        },
    ]

    // MARK: Batches

    static let batches: [VectorCase] = [
        VectorCase(name: "batch-first-damaged", summary: "a batch's first record damaged: the rest of it is skipped as orphans") {
            flipping(try await standard(), key: "batch-0", at: 35)
        },
        VectorCase(name: "batch-middle-damaged", summary: "a batch's second record damaged: reported there; its intact first record discarded with it") {
            flipping(try await standard(), key: "batch-1", at: 35)
        },
        VectorCase(name: "batch-last-damaged", summary: "a batch's last record damaged") {
            flipping(try await standard(), key: "batch-2", at: 35)
        },
        VectorCase(name: "batch-continuation-without-start", summary: "a lone record flagged as a batch continuation, resealed", files: standardFrame("key-5") { $0.flags = 2 }),
        VectorCase(name: "batch-interrupted", summary: "a batch's last record flagged as a lone record, resealed: the batch is broken at its start", files: standardFrame("batch-2") { $0.flags = 0 }),
        VectorCase(name: "batch-never-ends", summary: "a batch's last record flagged to continue, resealed: the next lone record interrupts it", files: standardFrame("batch-2") { $0.flags = 3 }),
    ]

    // MARK: The segment chain

    static let chain: [VectorCase] = [
        VectorCase(name: "chain-segment-missing", summary: "a middle segment deleted: a gap in the sequence numbers") {
            var files = try await multi()
            files[segments(files)[1]] = nil
            return files
        },
        VectorCase(name: "chain-segment-overlapping", summary: "a copy of the newest segment named (and headed) one past the first segment's base") {
            var files = try await multi()
            let names = segments(files)
            var copy = VectorSegment(parsing: files[names.last!]!)
            let base = VectorSegment(parsing: files[names[0]]!).base + 1
            VectorBytes.store(base, into: &copy.header, at: 16)
            files[VectorBytes.segmentName(base)] = copy.encoded()
            return files
        },
        VectorCase(name: "chain-empty-middle-segment", summary: "a middle segment with only its header") {
            let files = try await multi()
            return patched(files, segments(files)[1]) { $0 = Array($0[..<48]) }
        },
    ]
}
