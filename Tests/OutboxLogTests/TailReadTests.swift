import OutboxLocking
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// `entries(after:limit:)` called again and again at the end of a growing
/// log, as a queue's consumer does after each append: it must return
/// exactly what was appended since (live, once, in order), verify each
/// record when it is first scanned rather than the whole active segment per
/// call, and never hand back bytes it did not verify in that call.
@Suite("Reading at the end of a growing log")
struct TailReadTests {
    @Test("a reader at the end verifies what was appended since its last read, not the segment again")
    func verifiesOnlyTheGrowth() async throws {
        let directory = TemporaryDirectory()
        let counter = ReadCounter(base: PosixFileSystem())
        var configuration = testConfiguration()
        configuration.fileSystem = counter
        let log = try await OutboxLog.open(at: directory.path, configuration: configuration)
        for i in 0..<2_000 { try await log.put(LogKey("k\(i)"), .pattern(1_000, seed: i), durability: .buffered) }
        var after = try #require(try await log.entries(after: 0, limit: 10_000).last).sequence
        let segmentBytes = log.statistics.totalBytes
        #expect(segmentBytes > 2_000_000)
        counter.reset()
        for i in 0..<20 {
            try await log.put(LogKey("n\(i)"), .pattern(1_000, seed: -i), durability: .written)
            let page = try await log.entries(after: after, limit: 256)
            #expect(page.map(\.key) == [LogKey("n\(i)")])
            after = try #require(page.last).sequence
        }
        // Twenty reads of a 2 MB segment would read 40 MB; each read reads
        // what was appended: about 1 KB.
        #expect(counter.bytesRead < 200_000, "read \(counter.bytesRead) bytes for 20 appends of 1 KB")
        try await log.close()
    }

    @Test("reads at the end see appends, overwrites and deletes between them, each live record once")
    func modelAtTheEnd() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments(16_384))
        var generator = SplitMix64(seed: 0x7A11)
        print("TailReadTests.modelAtTheEnd seed: 0x7A11")
        // Two readers at their own positions, as two consumers are.
        var after: [UInt64] = [0, 0]
        var seen: [[LogKey: [UInt8]]] = [[:], [:]]
        var model: [LogKey: [UInt8]] = [:]
        for step in 0..<600 {
            let key = LogKey("k\(Int.random(in: 0..<40, using: &generator))")
            if Bool.random(using: &generator) || model[key] == nil {
                let value = [UInt8].pattern(Int.random(in: 1..<300, using: &generator), seed: step)
                try await log.put(key, value, durability: .written)
                model[key] = value
            } else {
                _ = try await log.delete(key, durability: .written)
                model[key] = nil
            }
            let reader = Int.random(in: 0..<2, using: &generator)
            guard Int.random(in: 0..<3, using: &generator) == 0 else { continue }
            while true {
                let page = try await log.entries(after: after[reader], limit: Int.random(in: 1..<8, using: &generator))
                if page.isEmpty { break }
                for entry in page {
                    #expect(entry.sequence > after[reader], "step \(step): a record came back")
                    #expect(model[entry.key] == entry.value, "step \(step): \(entry.key) is not its live value")
                    after[reader] = entry.sequence
                    seen[reader][entry.key] = entry.value
                }
            }
        }
        // Read to the end: every live record written after a reader's last
        // read of its key has reached it, with its current value.
        for reader in 0..<2 {
            while true {
                let page = try await log.entries(after: after[reader], limit: 50)
                if page.isEmpty { break }
                for entry in page {
                    after[reader] = entry.sequence
                    seen[reader][entry.key] = entry.value
                }
            }
            for (key, value) in model { #expect(seen[reader][key] == value, "reader \(reader) missed \(key)") }
        }
        try await log.close()
    }

    @Test("a record damaged on disk after a page stopped before it fails the next page, never comes back altered")
    func rotBetweenPages() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        for i in 0..<6 { try await log.put(LogKey("k\(i)"), .pattern(100, seed: i), durability: .written) }
        let first = try await log.entries(after: 0, limit: 2)
        #expect(first.map(\.key) == [LogKey("k0"), LogKey("k1")])
        // Flip a byte of k3's value: the page after stops at k2, then k3.
        let files = LogFiles(directory: directory.path)
        let segment = try #require(files.segments.last)
        let bytes = files.read(segment)
        let value = [UInt8].pattern(100, seed: 3)
        let at = try #require(bytes.firstRange(of: value)).lowerBound + 50
        try files.overwrite(segment, at: at, with: [bytes[at] ^ 0x40])
        await #expect(throws: OutboxLogError.self) {
            let next = try await log.entries(after: first[1].sequence, limit: 4)
            Issue.record("returned \(next.map(\.key)) from a damaged record")
        }
        try? await log.close()
    }
}

extension TailReadTests {
    @Test("a page after UInt64.max, in a log of several segments, is empty, no trap")
    func pageAfterTheLargestSequence() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        for i in 0..<40 { try await log.put(LogKey("k\(i)"), .pattern(200, seed: i), durability: .buffered) }
        try #require(log.statistics.segments > 1)
        #expect(try await log.entries(after: .max, limit: 10).isEmpty)
        try await log.close()
    }

    @Test("a page of Int.max entries after a page that stopped inside a segment returns the rest, no trap")
    func hugeLimitAfterAPage() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        for i in 0..<30 { try await log.put(LogKey("k\(i)"), .pattern(40, seed: i), durability: .buffered) }
        let first = try await log.entries(after: 0, limit: 10)
        let rest = try await log.entries(after: try #require(first.last).sequence, limit: .max)
        #expect(rest.map(\.key) == (10..<30).map { LogKey("k\($0)") })
        try await log.close()
    }

    /// Record 1 left the scan's buffer and is read again when the page
    /// returns it; that read brings record 2 into the buffer too, as bytes
    /// read anew. Both must be verified again, not trusted as the scan's.
    @Test(
        "a record read again within one page (after the scan's buffer moved past it), and the next one that read brought in, are verified again",
        arguments: [1, 2])
    func rereadWithinAPageIsVerified(record: Int) async throws {
        // The same log as CopyReverifyTests: 80 records of 64 KiB, more than
        // the scanner's 4 MiB read-ahead, so a page of all of them reads the
        // first ones twice: in the scan, and when it returns them.
        let target = Int64(CopyReverifyTests.offset(ofRecord: record) + 500)
        let reads = try await CopyReverifyTests.readsOfByte(target) { _ = try await $0.entries(after: 0, limit: 1_000) }
        try #require(reads >= 2, "the page does not read the record again: nothing to test")

        let (log, rot, _) = try await CopyReverifyTests.logWithRot(atByte: target, onRead: reads)
        let key = LogKey("k\(record)")
        await #expect {
            let page = try await log.entries(after: 0, limit: 1_000)
            let intact = page.first { $0.key == key }?.value == CopyReverifyTests.value(record)
            Issue.record("returned \(page.count) entries, \(key) \(intact ? "intact" : "altered")")
        } throws: { error in
            (error as? OutboxLogError)?.code == .corruption
        }
        #expect(rot.flipped)
        try? await log.close()
    }
}

/// Passes every call to `base`, counting the bytes read.
private final class ReadCounter: ForwardingFileSystem, Sendable {
    let base: any FileSystem
    private let count = Locked(0)

    init(base: any FileSystem) { self.base = base }

    var bytesRead: Int { count.withLock { $0 } }
    func reset() { count.withLock { $0 = 0 } }

    func read(_ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        let n = try base.read(descriptor, into: buffer, at: offset)
        count.withLock { $0 += n }
        return n
    }
}

@Suite("Reading a key that is being rewritten")
struct RewrittenKeyReadTests {
    @Test("a get of a key rewritten again and again, buffered, returns one of its values, never an internal error")
    func getWhileRewritten() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        try await log.put("hot", .pattern(16, seed: 0), durability: .written)
        let values = Set((0...4_000).map { [UInt8].pattern(16, seed: $0) })
        let writer = Task {
            for i in 1...4_000 { try await log.put("hot", .pattern(16, seed: i), durability: .buffered) }
        }
        var reads = 0
        while !writer.isCancelled {
            let value = try await log.get("hot")?.value
            #expect(value.map(values.contains) == true)
            reads += 1
            if reads >= 4_000 { break }
        }
        try await writer.value
        try await log.close()
    }

    @Test("a page read while a key's annotation is rewritten, buffered, returns one of its annotations, never a false corruption")
    func pageWhileAnnotated() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        for i in 0..<20 { try await log.put(LogKey("key-\(i)"), .pattern(64, seed: i), durability: .written) }
        // The writer annotates until the reader is done, so every page races
        // it; every eighth annotation waits to be written, so what is in
        // memory stays a few records, as in an app, not a flood.
        let writer = Task {
            var i = 0
            while !Task.isCancelled {
                let durability: Durability = i % 8 == 7 ? .written : .buffered
                try await log.annotate("key-5", Array("note-\(i)".utf8), durability: durability)
                i += 1
            }
        }
        for _ in 0..<300 {
            let page = try await log.entries(after: 0, limit: 20)
            #expect(page.count == 20)
            if let note = page.first(where: { $0.key == LogKey("key-5") })?.annotation?.payload {
                #expect(String(decoding: note, as: UTF8.self).hasPrefix("note-"))
            }
        }
        writer.cancel()
        try await writer.value
        try await log.close()
    }
}
