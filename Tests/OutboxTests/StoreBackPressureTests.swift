import Foundation
import Outbox
import OutboxLog
import Testing

/// The log under a store bounds the bytes waiting for its writer
/// (`maximumPendingBytes`) and refuses a `submit` beyond it. The store
/// submits under its own lock, after changing its memory: a refusal there
/// would leave memory and disk apart and close the store. So the store must
/// wait for room first, and a full log must only slow it down.
@Suite("Store back-pressure")
struct StoreBackPressureTests {
    /// A log whose bound is a few records of `payloadSize`, written only
    /// when someone waits (buffered enqueues pile up).
    static func tightLog(_ configuration: inout OutboxStoreConfiguration) {
        configuration.log.groupCommitLimit = 4096
        configuration.log.maximumPendingBytes = 8192
        configuration.log.bufferedFlushThreshold = 1 << 30
    }

    static let payload = String(repeating: "p", count: 3000)

    @Test("buffered enqueues past the log's maximumPendingBytes wait for room; the store stays usable")
    func bufferedEnqueuesWaitForRoom() async throws {
        var subject = try await StoreUnderTest.make(.log) { configuration in
            Self.tightLog(&configuration)
            configuration.enqueueDurability = .buffered
        }
        for _ in 0..<12 { try await subject.store.add(request(payload: Self.payload)) }
        try await InputValidationTests.expectUsable(&subject, holding: 12)
        try await subject.close()
    }

    @Test("concurrent enqueues and deliveries past the bound all succeed and survive a reopen")
    func concurrentEnqueuesWaitForRoom() async throws {
        var subject = try await StoreUnderTest.make(.log) { configuration in
            Self.tightLog(&configuration)
            configuration.attemptDurability = .buffered
            configuration.successDurability = .buffered
        }
        let store = subject.store
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask {
                    let id = try await store.add(request(payload: Self.payload))
                    if index.isMultiple(of: 2) { try await store.deliver(id) }
                }
            }
            try await group.waitForAll()
        }
        try await subject.reopen()
        let summary = try await subject.store.summary()
        #expect(summary.total == 8 && summary.count(.pending) == 8, "\(summary)")
        try await subject.close()
    }
}
