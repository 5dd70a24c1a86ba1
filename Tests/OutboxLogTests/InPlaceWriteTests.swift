import Foundation
import OutboxLocking
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Writes in place: a `written` append with nobody writing does its one
/// `pwrite` on the calling thread; everything else still goes through the
/// writer thread, one write at a time, in order.
@Suite("Writes in place")
struct InPlaceWriteTests {
    @Test("a written append with nobody writing is written on the caller's thread; with writesInPlace off, on the writer's")
    func writtenAppendWritesOnTheCallersThread() async throws {
        for inPlace in [true, false] {
            let threads = ThreadLog()
            let disk = HookedFileSystem(base: SimulatedFileSystem(directories: ["/data"])) { operation in
                if operation == .write || operation == .synchronize { threads.record(operation) }
            }
            var configuration = simulatedConfiguration(disk, segmentSize: 1 << 20)
            configuration.writesInPlace = inPlace
            let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
            // A durable append: its write and its sync run on the writer thread.
            try await log.put("durable", [1], durability: .durable)
            let writer = try #require(threads.last(.synchronize))
            #expect(threads.last(.write) == writer)
            try await log.put("written", [2], durability: .written)
            if inPlace {
                #expect(threads.last(.write) != writer, "the written append was handed to the writer thread")
            } else {
                #expect(threads.last(.write) == writer)
            }
            #expect(log.statistics.writtenSequence == log.statistics.nextSequence - 1)
            #expect(try await log.get("written")?.value == [2])
            try await log.close()
        }
    }

    @Test(
        "a failed write poisons the log the same way on the caller's thread as on the writer's",
        arguments: [true, false])
    func failedWritePoisonsAlike(inPlace: Bool) async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        var configuration = simulatedConfiguration(disk, segmentSize: 1 << 20)
        configuration.writesInPlace = inPlace
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        for i in 0..<10 { try await log.put(LogKey("k\(i)"), .pattern(40, seed: i), durability: .written) }
        disk.faults.install(FaultRule(failing: .write, repetition: .always))
        do {
            try await log.put("doomed", [1], durability: .written)
            Issue.record("a written append succeeded although its write failed")
        } catch {
            #expect(error.code == .io, "the failing append gets the write's own error")
        }
        for durability in Durability.allCases {
            do {
                try await log.put("after", [2], durability: durability)
                Issue.record("an append after a failed write succeeded")
            } catch {
                #expect(error.code == .poisoned)
            }
        }
        await #expect(throws: OutboxLogError.self) { try await log.flush() }
        disk.faults.removeAllRules()
        _ = try? await log.close()
        disk.simulateProcessCrash()
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        for i in 0..<10 { #expect(try await reopened.get(LogKey("k\(i)"))?.value == .pattern(40, seed: i)) }
        #expect(!reopened.contains("doomed"))
        try await reopened.close()
    }

    @Test("a caller that waits while another writes in place is failed with that write's error")
    func waiterBehindAFailedInPlaceWriteGetsItsError() async throws {
        let gate = WriteGate()
        let disk = HookedFileSystem(base: SimulatedFileSystem(directories: ["/data"])) { operation, _ in
            operation == .write ? gate.pass() : nil
        }
        let log = try await OutboxLog.open(
            at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
        try await log.put("first", [0], durability: .written)
        gate.hold()
        let first = Task { try await log.put("held", [1], durability: .written) }
        await gate.waitUntilHolding()  // the first append's in-place write is under way
        let second = Task { try await log.put("behind", [2], durability: .written) }
        while log.statistics.nextSequence < log.statistics.writtenSequence + 3 { await Task.yield() }
        gate.release(failingWith: .ioError)
        for task in [first, second] {
            do {
                _ = try await task.value
                Issue.record("an append succeeded although the write failed")
            } catch let error as OutboxLogError {
                #expect(error.code == .io, "got \(error)")
            }
        }
        _ = try? await log.close()
    }

    @Test("writes in place and the writer thread never overlap, and each segment's bytes are written in order without gaps")
    func writesNeverInterleave() async throws {
        let directory = TemporaryDirectory()
        let monitor = WriteMonitor(base: PosixFileSystem())
        var configuration = smallSegments(16 << 10)
        configuration.fileSystem = monitor
        let log = try await OutboxLog.open(at: directory.path, configuration: configuration)
        let acknowledged = Locked<[LogKey: [UInt8]]>([:])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for producer in 0..<8 {
                group.addTask {
                    for i in 0..<120 {
                        let key = LogKey("p\(producer)-\(i % 40)")
                        let value = [UInt8].pattern(20 + (i * 7) % 300, seed: producer * 1000 + i)
                        let durability: Durability = [.written, .written, .buffered, .durable][(producer + i) % 4]
                        try await log.put(key, value, durability: durability)
                        acknowledged.withLock { $0[key] = value }
                        if i % 16 == 0 { await Task.yield() }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await log.close()
        #expect(monitor.overlaps == 0, "two writes ran at once")
        #expect(monitor.gaps.isEmpty, "writes out of order or with gaps: \(monitor.gaps.prefix(5))")
        #expect(monitor.writes > 20)
        let reopened = try await OutboxLog.open(at: directory.path, configuration: smallSegments(16 << 10))
        for (key, value) in acknowledged.withLock({ $0 }) { #expect(try await reopened.get(key)?.value == value) }
        try await reopened.close()
    }
}

/// Which thread did each file-system operation last.
final class ThreadLog: Sendable {
    private let threads = Locked<[FileSystemOperation: ObjectIdentifier]>([:])

    func record(_ operation: FileSystemOperation) {
        let thread = ObjectIdentifier(Thread.current)
        threads.withLock { $0[operation] = thread }
    }

    func last(_ operation: FileSystemOperation) -> ObjectIdentifier? { threads.withLock { $0[operation] } }
}

/// Holds writes until released, then lets them through or fails them.
final class WriteGate: Sendable {
    private struct State {
        var holding = false
        var held = 0
        var failure: Errno?
        var released = false
    }
    private let state = Locked(State())
    private let opened = DispatchSemaphore(value: 0)

    func hold() { state.withLock { $0 = State(holding: true) } }

    /// Called from the file system: blocks while the gate holds writes.
    func pass() -> Errno? {
        let holding = state.withLock { state -> Bool in
            guard state.holding, !state.released else { return false }
            state.held += 1
            return true
        }
        guard holding else { return state.withLock { $0.failure } }
        opened.wait()
        opened.signal()
        return state.withLock { $0.failure }
    }

    func waitUntilHolding() async {
        while state.withLock({ $0.held == 0 }) { await Task.yield() }
    }

    func release(failingWith error: Errno?) {
        state.withLock {
            $0.failure = error
            $0.released = true
        }
        opened.signal()
    }
}

/// Passes writes through to `base`, each held open a little longer, and records
/// whether two ever ran at once and whether each file's writes follow one
/// another without gaps.
final class WriteMonitor: ForwardingFileSystem, Sendable {
    private struct State {
        var inFlight = 0
        var overlaps = 0
        var writes = 0
        var ends: [Int32: Int64] = [:]
        var gaps: [String] = []
    }
    let base: any FileSystem
    private let state = Locked(State())

    init(base: any FileSystem) { self.base = base }

    var overlaps: Int { state.withLock { $0.overlaps } }
    var gaps: [String] { state.withLock { $0.gaps } }
    var writes: Int { state.withLock { $0.writes } }

    func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        state.withLock { state in
            state.inFlight += 1
            if state.inFlight > 1 { state.overlaps += 1 }
            // A segment's first write is its header at 0; every later one starts where the last ended.
            if let end = state.ends[descriptor.rawValue], offset != end, offset != 0 {
                state.gaps.append("descriptor \(descriptor.rawValue): write at \(offset), previous ended at \(end)")
            }
        }
        // Widen the window in which a second write would overlap this one:
        // give the processor to the other threads a few times (no clock).
        for _ in 0..<8 { sched_yield() }
        defer { state.withLock { $0.inFlight -= 1 } }
        let written = try base.write(descriptor, bytes, at: offset)
        state.withLock { state in
            state.ends[descriptor.rawValue] = offset + Int64(written)
            state.writes += 1
        }
        return written
    }

    func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        let descriptor = try base.openFile(path, mode: mode)
        state.withLock { $0.ends[descriptor.rawValue] = nil }
        return descriptor
    }
    func close(_ descriptor: FileDescriptor) throws(Errno) {
        state.withLock { $0.ends[descriptor.rawValue] = nil }
        try base.close(descriptor)
    }
    /// `PosixFileSystem`'s own: it refuses a lock this process holds before opening anything.
    func openAndLock(_ path: FilePath) throws(Errno) -> FileDescriptor { try base.openAndLock(path) }
}
