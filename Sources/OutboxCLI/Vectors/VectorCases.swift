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
    static var all: [VectorCase] { clean + compaction + tornTails + allocatedAhead + frames + headers + batches + chain }

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
        VectorCase(name: "clean-expiring-records", summary: "values and an annotation with expiries over several segments, then values without") {
            VectorLogs.canonical(try await VectorLogs.expiring())
        },
        VectorCase(name: "clean-after-retention", summary: "the expired segments removed by retention: the log starts past sequence 1") {
            VectorLogs.canonical(try await VectorLogs.afterRetention(try await VectorLogs.expiring()))
        },
        VectorCase(name: "retention-committed", summary: "a COMPACTION with inputs and no outputs (retention), nothing removed yet: completed") {
            let before = try await VectorLogs.expiring()
            let after = try await VectorLogs.afterRetention(before)
            var files = VectorLogs.canonical(before)
            let removed = segments(before).filter { after[$0] == nil }
            files["COMPACTION"] = VectorBytes.intent(
                inputs: removed.map { (VectorBytes.load(files[$0]!, at: 16), VectorBytes.load(files[$0]!, at: 32)) }, outputs: [])
            return files
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

    // MARK: Space allocated ahead

    static let allocatedAhead: [VectorCase] = [
        VectorCase(name: "allocated-ahead-zeros", summary: "the newest segment ends in zeros after its last record (space allocated ahead, never written): clean") {
            let files = try await standard()
            return patched(files, segments(files)[0]) { $0 += [UInt8](repeating: 0, count: 3000) }
        },
        VectorCase(name: "allocated-ahead-after-torn-frame", summary: "a record cut short, then zeros to the end of the file: a torn tail, cut at the record") {
            let files = try await standard()
            return patched(files, segments(files)[0]) { bytes in
                bytes = Array(bytes[..<(offset(of: "tail-2", in: bytes) + 31)]) + [UInt8](repeating: 0, count: 2000)
            }
        },
        VectorCase(name: "allocated-ahead-zeros-then-garbage", summary: "zeros after the last record, then a non-zero byte: not space allocated ahead, a torn tail") {
            let files = try await standard()
            return patched(files, segments(files)[0]) { $0 += [UInt8](repeating: 0, count: 2000) + [0x5A] }
        },
        VectorCase(name: "allocated-ahead-in-sealed-segment", summary: "zeros after the records of a segment that is not the newest: damage (the writer trims them before sealing)") {
            let files = try await multi()
            return patched(files, segments(files)[1]) { $0 += [UInt8](repeating: 0, count: 512) }
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
}
