import OutboxLocking
import Testing

@testable import OutboxQueue

/// Trims and consumer creations and removals take turns through
/// `MaintenanceGate`: one at a time, in the order they arrived.
@Suite("Queue: maintenance takes turns")
struct MaintenanceGateTests {
    @Test("never two at once, and every step runs, even when one throws")
    func oneAtATime() async throws {
        let gate = MaintenanceGate()
        let inside = Locked(0)
        let most = Locked(0)
        let ran = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    _ = try? await gate.run { () throws(QueueError) in
                        inside.withLock { $0 += 1 }
                        most.withLock { [now = inside.withLock { $0 }] in $0 = max($0, now) }
                        await Task.yield()
                        inside.withLock { $0 -= 1 }
                        ran.withLock { $0 += 1 }
                        if index % 7 == 0 { throw QueueError(.invalidArgument, "step \(index) fails") }
                    }
                }
            }
        }
        #expect(most.withLock { $0 } == 1)
        #expect(ran.withLock { $0 } == 200)
    }

    @Test("a step that waits is let in after the one inside, in arrival order")
    func inArrivalOrder() async throws {
        let gate = MaintenanceGate()
        let order = Locked<[Int]>([])
        let (release, releaser) = AsyncStream<Void>.makeStream()
        let first = Task {
            try await gate.run { () throws(QueueError) in
                for await _ in release { break }
                order.withLock { $0.append(0) }
            }
        }
        // Each waiter is queued before the next one starts.
        var waiters: [Task<Void, any Error>] = []
        for index in 1...3 {
            waiters.append(Task { try await gate.run { () throws(QueueError) in order.withLock { $0.append(index) } } })
            while gate.waitingCount < index { await Task.yield() }
        }
        releaser.yield()
        try await first.value
        for waiter in waiters { try await waiter.value }
        #expect(order.withLock { $0 } == [0, 1, 2, 3])
    }
}
