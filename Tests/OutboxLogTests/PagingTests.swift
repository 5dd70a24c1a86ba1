import OutboxLog
import SystemPackage
import Testing

/// `entries(after:limit:)` page by page: a page that stops inside a segment
/// leaves a cursor so the next page does not verify that segment again.
/// Whatever happens between pages, paging must return exactly the live
/// records, each once, in sequence order, with their current bytes.
@Suite("Paging through entries")
struct PagingTests {
    /// Pages through `log` with `limit`, running `between` after each page.
    private func page(
        _ log: OutboxLog, limit: Int, between: (Int) async throws -> Void = { _ in }
    ) async throws -> [LogEntry] {
        var seen: [LogEntry] = []
        var after: UInt64 = 0
        var pages = 0
        while true {
            let page = try await log.entries(after: after, limit: limit)
            if page.isEmpty { return seen }
            // A page that does not move forward would page forever.
            guard page[0].sequence > after, pages < 10_000 else {
                Issue.record("paging does not move forward after \(after)")
                return seen
            }
            seen += page
            after = page.last!.sequence
            pages += 1
            try await between(pages)
        }
    }

    private func expectExactly(_ seen: [LogEntry], _ model: [LogKey: [UInt8]], annotations: [LogKey: [UInt8]] = [:]) {
        #expect(seen.count == model.count)
        #expect(Set(seen.map(\.key)).count == seen.count, "a key came back twice")
        #expect(seen.map(\.sequence) == seen.map(\.sequence).sorted())
        for entry in seen {
            #expect(entry.value == model[entry.key], "wrong bytes for \(entry.key)")
            #expect(entry.annotation?.payload == annotations[entry.key])
        }
    }

    @Test("small pages across many segments return every live record once, with its annotation")
    func pagesAcrossSegments() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        var model: [LogKey: [UInt8]] = [:]
        var annotations: [LogKey: [UInt8]] = [:]
        for i in 0..<400 {
            let key = LogKey("k\(i % 150)")
            let value = [UInt8].pattern(20 + i % 60, seed: i)
            try await log.put(key, value, durability: .buffered)
            model[key] = value
            annotations[key] = nil
            if i % 7 == 0 {
                let note = [UInt8].pattern(6, seed: -i)
                try await log.annotate(key, note, durability: .buffered)
                annotations[key] = note
            }
            if i % 11 == 0 {
                _ = try await log.delete(key, durability: .buffered)
                model[key] = nil
                annotations[key] = nil
            }
        }
        #expect(log.statistics.segments > 4)
        for limit in [1, 3, 17, 64, 1000] {
            expectExactly(try await page(log, limit: limit), model, annotations: annotations)
        }
        try await log.close()
    }

    @Test("records written, overwritten and deleted between pages are seen as they are now")
    func writesBetweenPages() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        var model: [LogKey: [UInt8]] = [:]
        for i in 0..<120 {
            let key = LogKey("k\(i)")
            let value = [UInt8].pattern(30, seed: i)
            try await log.put(key, value, durability: .written)
            model[key] = value
        }
        // After each page: append a new key (the active segment grows),
        // overwrite a key not read yet (its old record is no longer live)
        // and delete another one not read yet.
        var next = 120
        let seen = try await page(log, limit: 5) { pageNumber in
            guard pageNumber <= 40 else { return }  // then let paging reach the end
            let fresh = LogKey("k\(next)")
            let value = [UInt8].pattern(30, seed: next)
            try await log.put(fresh, value, durability: .written)
            model[fresh] = value
            next += 1
            // Far enough ahead that paging has not reached them yet (an
            // overwrite of a key already read would rightly return it twice).
            let ahead = pageNumber * 8 + 20  // paging has read about 7 keys per page by then
            guard ahead + 2 < 120 else { return }
            let overwritten = LogKey("k\(ahead)")
            if model[overwritten] != nil {
                let newer = [UInt8].pattern(12, seed: -pageNumber)
                try await log.put(overwritten, newer, durability: .written)
                model[overwritten] = newer
            }
            let deleted = LogKey("k\(ahead + 2)")
            _ = try await log.delete(deleted, durability: .written)
            model[deleted] = nil
        }
        // Records written after the paging began may have been paged or not
        // (it stops when it reaches the end): compare with what was live at
        // the end, among the keys that were returned or are still live.
        #expect(Set(seen.map(\.key)).count == seen.count, "a key came back twice")
        let returned = Dictionary(seen.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(seen.map(\.sequence) == seen.map(\.sequence).sorted())
        for (key, value) in model {
            #expect(returned[key]?.value == value, "live key \(key) missing or stale")
        }
        for key in returned.keys { #expect(model[key] != nil, "deleted key \(key) came back") }
        try await log.close()
    }

    @Test("a compaction between pages neither loses nor repeats a record")
    func compactionBetweenPages() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        var model: [LogKey: [UInt8]] = [:]
        for i in 0..<300 {
            let key = LogKey("k\(i % 60)")
            let value = [UInt8].pattern(40, seed: i)
            try await log.put(key, value, durability: .written)
            model[key] = value
        }
        let seen = try await page(log, limit: 4) { pageNumber in
            if pageNumber % 3 == 1 { _ = try await log.compact() }
        }
        expectExactly(seen, model)
        try await log.close()
    }
}
