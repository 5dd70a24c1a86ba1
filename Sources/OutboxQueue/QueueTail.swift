/// The elements of a consumer, then each new one as it is appended: an
/// `AsyncSequence` that waits instead of ending. Made by
/// ``QueueConsumer/tail(batch:)``.
public struct QueueTail: AsyncSequence, Sendable {
    public typealias Element = QueueElement

    let consumer: QueueConsumer
    let signal: AppendSignal
    let batch: Int

    public struct AsyncIterator: AsyncIteratorProtocol {
        let consumer: QueueConsumer
        var pages: QueueBatches.AsyncIterator
        var page: [QueueElement] = []
        var index = 0
        /// The consumer's rewinds when the page was read.
        var rewinds: UInt64 = 0

        public mutating func next() async throws -> QueueElement? {
            // After a rewind the rest of the page is not yielded: it is read
            // again, from the committed position.
            if consumer.rewinds != rewinds {
                page = []
                index = 0
            }
            if index >= page.count {
                guard let next = try await pages.nextPage() else { return nil }
                (page, rewinds) = next
                index = 0
            }
            let element = page[index]
            index += 1
            return element
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(consumer: consumer, pages: QueueBatches.AsyncIterator(consumer: consumer, signal: signal, max: batch))
    }
}
