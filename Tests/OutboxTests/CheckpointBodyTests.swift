import Foundation
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// The checkpoint body's decoder accepts only what a store writes: a body
/// that loads is the body a store writes for what it loaded, up to the
/// order of its records (the `store-checkpoint` fuzz target holds it to
/// that; Fuzz/regressions/store-checkpoint holds what it found). A body it
/// refuses costs only time: the open then reads every entry.
@Suite("Checkpoint body")
struct CheckpointBodyTests {
    /// One entry of a body, laid out as ``StoreCheckpointBody`` writes it.
    struct Entry {
        var id: UInt8
        /// The id's last four bytes, when more than 256 entries need ids.
        var wide: UInt32?
        var status: OutboxStatus = .pending
        var scope: UInt32 = 0
        var coalescing: UInt32 = 0
        var flags: UInt8 = 0
        var appKey: String?
        var logKey = false
        /// Dependencies, by the byte their ids repeat.
        var dependencies: [UInt8] = []
        /// A dependency failure: its code and the byte its parent's id repeats.
        var cause: (code: UInt8, parent: UInt8)?

        func write(into writer: inout ByteWriter) {
            if let wide {
                writer.raw([UInt8](repeating: id, count: 12))
                writer.integer(wide)
            } else {
                writer.raw([UInt8](repeating: id, count: 16))
            }
            writer.integer(UInt64(id))  // sequence
            writer.integer(Int64(0))  // when
            writer.integer(Int64(1_767_225_600_000))  // created at
            writer.integer(UInt32(100))  // stored bytes
            writer.integer(scope)
            writer.integer(UInt32(0))  // type
            writer.integer(coalescing)
            writer.integer(Int16(0))
            writer.integer(UInt16(0))
            writer.integer(UInt16(10))
            writer.integer(status.code)
            writer.integer(
                flags | (dependencies.isEmpty ? 0 : 2) | (appKey != nil ? 4 : 0) | (cause != nil ? 8 : 0) | (logKey ? 16 : 0))
            if !dependencies.isEmpty {
                writer.integer(UInt16(dependencies.count))
                for parent in dependencies { writer.raw([UInt8](repeating: parent, count: 16)) }
            }
            if let appKey { writer.string(appKey) }
            if let cause {
                writer.integer(UInt8(1))  // failure fields: the last failure alone
                writer.integer(UInt8(13))  // cause: a dependency
                writer.integer(cause.code)
                writer.raw([UInt8](repeating: cause.parent, count: 16))
                writer.integer(Int32(-1))  // no HTTP status
                writer.integer(UInt8(0))  // no message
            }
            if logKey { writer.raw([UInt8](repeating: 0xEE, count: 16)) }
        }
    }

    static func body(names: [(UInt32, String)] = [], entries: [Entry] = [], completions: [(UInt8, String?)] = [], logKeys: Bool = false)
        -> [UInt8]
    {
        var writer = ByteWriter()
        writer.integer(UInt32(names.count))
        for (id, name) in names {
            writer.integer(id)
            writer.string(name)
        }
        writer.integer(UInt64(entries.count))
        for entry in entries { entry.write(into: &writer) }
        writer.integer(UInt64(completions.count))
        for (id, appKey) in completions {
            writer.raw([UInt8](repeating: id, count: 16))
            writer.integer(Int64(1_767_225_600_000))
            writer.integer(UInt8((appKey != nil ? 4 : 0) | (logKeys ? 16 : 0)))
            if let appKey { writer.string(appKey) }
            if logKeys { writer.raw([UInt8](repeating: 0xEE, count: 16)) }
        }
        return writer.bytes
    }

    /// Whether `body` loads into a fresh scheduler (of a sealed queue if `sealed`).
    static func loads(_ body: [UInt8], sealed: Bool = false) -> Bool {
        var scheduler = Scheduler(partition: "p", configuration: OutboxStoreConfiguration())
        return (try? StoreCheckpointBody.decode(body, into: &scheduler, nextSequence: 100, sealed: sealed)) != nil
    }

    @Test("a dependency failure loads only where a store records one: on a quarantined entry, naming one of its dependencies, with a known code")
    func dependencyFailures() {
        let parent = Entry(id: 1, status: .quarantined)
        func loads(_ child: Entry) -> Bool { Self.loads(Self.body(entries: [parent, child])) }
        #expect(loads(Entry(id: 2, status: .quarantined, dependencies: [1], cause: (1, 1))))
        #expect(!loads(Entry(id: 2, status: .pending, dependencies: [1], cause: (1, 1))), "not quarantined")
        #expect(!loads(Entry(id: 2, status: .quarantined, dependencies: [1], cause: (1, 9))), "not one of its dependencies")
        #expect(!loads(Entry(id: 2, status: .quarantined, cause: (1, 1))), "no dependencies at all")
        for code: UInt8 in [0, 7, 255] {
            #expect(!loads(Entry(id: 2, status: .quarantined, dependencies: [1], cause: (code, 1))), "code \(code)")
        }
    }

    @Test("a body as a store writes it loads, plain and sealed")
    func written() {
        let entries = [
            Entry(id: 1, scope: 1, coalescing: 2, flags: 1, appKey: "order-1"),
            Entry(id: 2, status: .waitingToRetry, scope: 1),
        ]
        #expect(Self.loads(Self.body(names: [(1, "chat"), (2, "draft")], entries: entries, completions: [(3, "order-3")])))
        let sealed = entries.map { entry in
            var entry = entry
            entry.logKey = true
            return entry
        }
        #expect(Self.loads(Self.body(names: [(1, "chat"), (2, "draft")], entries: sealed, completions: [(3, nil)], logKeys: true), sealed: true))
    }

    @Test("a name no entry uses is refused")
    func unusedName() {
        #expect(!Self.loads(Self.body(names: [(1, "chat"), (2, "gone")], entries: [Entry(id: 1, scope: 1)])))
    }

    @Test("one name under two ids is refused")
    func repeatedName() {
        #expect(!Self.loads(Self.body(names: [(1, "chat"), (2, "chat")], entries: [Entry(id: 1, scope: 1), Entry(id: 2, scope: 2)])))
    }

    @Test("the unchanged flag is refused where a store never sets it: no coalescing key, or not pending")
    func unchangedFlag() {
        #expect(!Self.loads(Self.body(entries: [Entry(id: 1, flags: 1)])))
        #expect(!Self.loads(Self.body(names: [(1, "draft")], entries: [Entry(id: 1, status: .waitingToRetry, coalescing: 1, flags: 1)])))
    }

    @Test("log keys are refused in a plain queue's body and required in a sealed one's")
    func logKeys() {
        #expect(!Self.loads(Self.body(entries: [Entry(id: 1, logKey: true)])))
        #expect(!Self.loads(Self.body(completions: [(1, nil)], logKeys: true)))
        #expect(!Self.loads(Self.body(entries: [Entry(id: 1)]), sealed: true))
        #expect(!Self.loads(Self.body(completions: [(1, nil)]), sealed: true))
    }

    @Test("one app key held by two entries, or by an entry and another's completion, is refused")
    func appKeyHeldTwice() {
        #expect(!Self.loads(Self.body(entries: [Entry(id: 1, appKey: "k"), Entry(id: 2, appKey: "k")])))
        #expect(!Self.loads(Self.body(entries: [Entry(id: 1, appKey: "k")], completions: [(2, "k")])))
        // The entry's own completion holds its key too.
        #expect(Self.loads(Self.body(entries: [Entry(id: 1, status: .succeeded, appKey: "k")], completions: [(1, "k")])))
    }

    @Test("an id listed twice is refused, in a small body and in one large enough to be loaded region by region")
    func repeatedID() {
        for count in [4, 20_000] {
            let entries = (0..<count).map { Entry(id: 1, wide: UInt32($0)) }
            #expect(Self.loads(Self.body(entries: entries)), "\(count) distinct ids")
            let repeated = entries + [Entry(id: 1, wide: UInt32(count / 2))]
            #expect(!Self.loads(Self.body(entries: repeated)), "\(count) ids, one of them twice")
        }
    }
}
