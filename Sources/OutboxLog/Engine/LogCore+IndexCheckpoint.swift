import Foundation
import OutboxCollections
import SystemPackage

/// Writing the index checkpoint (`INDEX`, see ``IndexCheckpoint``).
///
/// It is captured under the lock — the index's pages are shared, not copied
/// (``PackedTable``): each page an append later changes is copied then, once
/// — and written on a maintenance thread: wait until every record it covers
/// is durable, write `INDEX.tmp`, sync it, rename it over `INDEX`, sync the
/// directory. A checkpoint only saves reading: one that cannot be written is
/// logged and skipped, never a reason to fail the log, and the old file
/// stays valid or is recognised as stale at the next open.
///
/// It runs in the compaction slot (`compactionRunning`), so no compaction
/// swaps segments between its capture and its rename, and `close()` waits
/// for it like for a compaction. Written: at close, after each compaction,
/// and once ``OutboxLog/Configuration/indexCheckpointInterval`` bytes (or
/// the last checkpoint's size, if larger) were appended since the last.
extension LogCore {
    /// Starts a checkpoint on its own thread if one is due.
    func startIndexCheckpointIfDue() {
        guard configuration.indexCheckpoints, !configuration.readOnly else { return }
        let interval = configuration.indexCheckpointInterval
        let due = state.withLock { state -> Bool in
            guard case .open = state.phase, !state.closing, !state.compactionRunning, state.indexLoading == nil,
                state.bytesSinceCheckpoint >= max(interval, state.lastCheckpointSize)
            else { return false }
            state.compactionRunning = true
            return true
        }
        guard due else { return }
        EngineThread.start("outbox-checkpt") { [self] in
            defer { releaseCompaction() }
            do { try writeIndexCheckpoint() } catch {
                logger.warning("index checkpoint not written", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Writes a checkpoint covering everything appended so far; blocks until
    /// it is in place. Call it holding the compaction slot (or at close).
    /// Does nothing while the index is still loading or the log has failed.
    func writeIndexCheckpoint() throws(OutboxLogError) {
        guard let captured = captureCheckpoint() else { return }
        try waitUntilDurable(captured.sequence)
        let bytes = IndexCheckpoint.encode(
            sequence: captured.sequence, segments: captured.segments, elements: captured.elements, count: captured.count)
        try writeCheckpointFile(bytes)
        state.withLock { $0.lastCheckpointSize = bytes.count }
        logger.debug(
            "wrote an index checkpoint",
            metadata: ["sequence": "\(captured.sequence)", "keys": "\(captured.count)", "bytes": "\(bytes.count)"])
    }

    private struct CapturedCheckpoint {
        var sequence: UInt64
        var segments: [(id: UInt32, segment: IndexCheckpoint.Segment)]
        var elements: PackedTable<LogKey, IndexEntry>.DenseElements
        var count: Int
    }

    private func captureCheckpoint() -> CapturedCheckpoint? {
        state.withLock { state -> CapturedCheckpoint? in
            guard case .open = state.phase, state.indexLoading == nil else { return nil }
            var segments: [(id: UInt32, segment: IndexCheckpoint.Segment)] = []
            for id in state.order {
                guard let slot = state.slots[id] else { return nil }
                let usage = state.index.usage[id] ?? SegmentUsage()
                segments.append(
                    (id,
                     IndexCheckpoint.Segment(
                        base: slot.header.baseSequence, salt: slot.header.salt, coverEnd: slot.header.coverEnd,
                        coveredEnd: Int64(SegmentHeader.size) + usage.totalBytes, usage: usage)))
            }
            guard !segments.isEmpty else { return nil }
            state.bytesSinceCheckpoint = 0
            return CapturedCheckpoint(
                sequence: state.nextSequence - 1, segments: segments, elements: state.index.entries.denseElements,
                count: state.index.entries.count)
        }
    }

    private func writeCheckpointFile(_ bytes: [UInt8]) throws(OutboxLogError) {
        let temporary = layout.temporaryIndexCheckpointFile
        let descriptor: FileDescriptor
        do {
            descriptor = try fileSystem.openFile(temporary, mode: .createOrOpen)
        } catch {
            throw .io("cannot create the index checkpoint", error, file: temporary)
        }
        do throws(OutboxLogError) {
            defer { try? fileSystem.close(descriptor) }
            do {
                try fileSystem.truncate(descriptor, to: 0)
                try fileSystem.writeFully(descriptor, bytes, at: 0)
            } catch {
                throw .io("cannot write the index checkpoint", error, file: temporary)
            }
            do { try fileSystem.synchronize(descriptor) } catch {
                throw .io("cannot sync the index checkpoint", error, file: temporary)
            }
        } catch {
            try? fileSystem.removeFile(temporary)
            throw error
        }
        do { try fileSystem.rename(temporary, to: layout.indexCheckpointFile) } catch {
            try? fileSystem.removeFile(temporary)
            throw .io("cannot rename the index checkpoint into place", error, file: temporary)
        }
        do { try fileSystem.synchronizeDirectory(layout.directory) } catch {
            throw .io("cannot sync the directory after the index checkpoint", error, file: layout.directory)
        }
    }
}
