import OutboxLog

extension LogIdempotencyKeyStore {
    /// A write that was submitted to the log, or declined with an answer.
    enum Submission<Answer> {
        case submitted(LogTicket)
        case declined(Answer)
    }

    /// Under the memory's lock: unless `unless` answers (the key's state
    /// has moved on), submits `writes` to the log as one batch and then
    /// applies `then` to the memory, in the same critical section, so
    /// the log's order is memory's. Await the ticket after, outside the
    /// lock. When the log has no room for the batch now (back-pressure), it
    /// waits for room outside the lock and decides again.
    func submit<Answer>(
        _ writes: [LogWrite], unless declined: (KeyStoreMemory) -> Answer?, then apply: (inout KeyStoreMemory) -> Void
    ) async throws -> Submission<Answer> {
        let bytes = writes.reduce(0) { $0 + $1.frameSize }
        while true {
            let outcome = memory.withLock { memory -> Result<Submission<Answer>, OutboxLogError>? in
                if let answer = declined(memory) { return .success(.declined(answer)) }
                do throws(OutboxLogError) {
                    let ticket = try log.submit(writes)
                    apply(&memory)
                    return .success(.submitted(ticket))
                } catch {
                    return error.code == .backPressure ? nil : .failure(error)
                }
            }
            switch outcome {
            case .some(.success(let submission)): return submission
            case .some(.failure(let error)): throw Self.storeError(error)
            case .none:
                do { try await log.waitForRoom(bytes: bytes) } catch { throw Self.storeError(error) }
            }
        }
    }

    /// The store's error for a failure of its log.
    static func storeError(_ error: any Error) -> any Error {
        guard let error = error as? OutboxLogError else { return error }
        let code: IdempotencyKeyStoreError.Code =
            switch error.code {
            case .poisoned: .poisoned
            case .closed: .closed
            case .corruption: .damaged
            case .locked: .locked
            case .recordTooLarge: .responseTooLarge
            case .invalidArgument: .invalidArgument
            default: .io
            }
        return IdempotencyKeyStoreError(code, "\(error)")
    }
}
