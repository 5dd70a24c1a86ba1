import Dispatch
import Foundation
import OutboxCollections
import OutboxLocking
import SystemPackage

/// One segment's scan: its analysis and the records it found, in order.
struct ScannedSegment: Sendable {
    var analysis: SegmentAnalysis
    /// Committed records of the leading (undamaged) run.
    var records: [ScannedRecord]
    /// Committed records found past damage (collected only when asked).
    var laterRecords: [ScannedRecord]
}

/// Scans segments on a background thread, one ahead of the caller, so that
/// verifying CRCs (reading and checksumming) overlaps with building the
/// index: on two cores recovery then runs at the speed of the slower of the
/// two instead of their sum.
final class SegmentPrefetcher: Sendable {
    struct Job: Sendable {
        var fileSystem: any FileSystem
        var descriptor: FileDescriptor
        var path: FilePath
        var size: Int64
        var header: SegmentHeader
        var name: String

        /// Asks the file system to start reading the whole segment.
        func adviseWillRead() { fileSystem.adviseWillRead(descriptor, offset: 0, length: size) }
    }

    private let results = Locked<[Result<ScannedSegment, OutboxLogError>]>([])
    private let cancelled = Locked(false)
    /// Counts finished scans the caller has not taken yet.
    private let ready = DispatchSemaphore(value: 0)
    /// Counts scans the thread may start: at most two ahead of the caller.
    private let room = DispatchSemaphore(value: 2)
    /// Signalled once when the thread exits (never, if there is no thread).
    private let exited = DispatchSemaphore(value: 0)
    private let hasThread: Bool

    /// Starts scanning `jobs` in order.
    init(_ jobs: [Job], collectLaterRecords: Bool) {
        hasThread = !jobs.isEmpty
        guard hasThread else { return }
        EngineThread.start("outbox-recovery") { [self] in
            defer { exited.signal() }
            jobs[0].adviseWillRead()
            // One read buffer for every segment: see `releaseBuffer()`.
            var buffer = MappedBuffer()
            for (position, job) in jobs.enumerated() {
                room.wait()
                if cancelled.withLock({ $0 }) { return }
                // Let the disk read the next segment while this one is
                // checksummed: a cold open then overlaps I/O with CPU.
                if position + 1 < jobs.count { jobs[position + 1].adviseWillRead() }
                let result: Result<ScannedSegment, OutboxLogError>
                do throws(OutboxLogError) {
                    result = .success(try Self.scan(job, collectLaterRecords: collectLaterRecords, buffer: &buffer))
                } catch {
                    result = .failure(error)
                }
                results.withLock { $0.append(result) }
                ready.signal()
                if case .failure = result { return }
            }
        }
    }

    /// The next segment's scan, in the order given; waits for it if needed.
    func next() throws(OutboxLogError) -> ScannedSegment {
        ready.wait()
        let result = results.withLock { $0.removeFirst() }
        room.signal()
        return try result.get()
    }

    /// Stops the thread after its current scan and waits until it has
    /// exited: after this, it touches no descriptor the caller may close.
    /// Call it before the descriptors of the jobs are closed, whatever the
    /// outcome. Idempotent.
    func finish() {
        guard hasThread else { return }
        cancelled.withLock { $0 = true }
        room.signal()
        room.signal()
        exited.wait()
        exited.signal()  // for a second call
    }

    private static func scan(
        _ job: Job, collectLaterRecords: Bool, buffer: inout MappedBuffer
    ) throws(OutboxLogError) -> ScannedSegment {
        let reader = ChunkedFileReader(
            fileSystem: job.fileSystem, descriptor: job.descriptor, path: job.path, fileSize: job.size,
            reusing: buffer.take())
        defer { buffer = reader.releaseBuffer() }
        let scanner = SegmentScanner(reader: reader, header: job.header)
        var records: [ScannedRecord] = []
        var later: [ScannedRecord] = []
        // A frame is 28 bytes or more; most logs' frames are a few hundred.
        records.reserveCapacity(Int(min(job.size / 128, 1 << 20)))
        let analysis = try SegmentAnalysis.analyze(
            scanner, file: job.name,
            visit: { records.append($0) },
            visitLater: { if collectLaterRecords { later.append($0) } })
        return ScannedSegment(analysis: analysis, records: records, laterRecords: later)
    }
}
