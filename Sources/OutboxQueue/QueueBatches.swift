/// The elements of a consumer a batch at a time, then each batch of new
/// elements as they are appended: an `AsyncSequence` that waits instead of
/// ending, for a consumer that processes and commits in batches. Made by
/// ``QueueConsumer/batches(max:)``; ``QueueTail`` yields the same elements
/// one by one.
public struct QueueBatches: AsyncSequence, Sendable {
    public typealias Element = [QueueElement]

    let consumer: QueueConsumer
    let signal: AppendSignal
    let max: Int

    public struct AsyncIterator: AsyncIteratorProtocol {
        let consumer: QueueConsumer
        let signal: AppendSignal
        let max: Int

        /// The next batch: never empty; `nil` once the queue closed or the
        /// task was cancelled while there was nothing to read.
        public mutating func next() async throws -> [QueueElement]? {
            try await nextPage()?.elements
        }

        /// The next batch and the consumer's rewinds when it was read (a tail
        /// drops the rest of a page read before a rewind).
        mutating func nextPage() async throws(QueueError) -> (elements: [QueueElement], rewinds: UInt64)? {
            while true {
                if Task.isCancelled { return nil }
                // Noted before the read: an append after it wakes the wait.
                let generation = signal.generation
                let page: (elements: [QueueElement], rewinds: UInt64)
                do { page = try await consumer.read(max: max) } catch {
                    if error.code == .closed { return nil }
                    throw error
                }
                if !page.elements.isEmpty { return page }
                if await !signal.wait(after: generation) { return nil }
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(consumer: consumer, signal: signal, max: max)
    }
}
