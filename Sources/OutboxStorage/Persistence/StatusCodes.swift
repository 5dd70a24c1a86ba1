import OutboxModel

// The one-byte codes a status and a dependency failure have in the store's
// records and checkpoints (Docs/STORE-FORMAT.md): the storage's, not the
// model's, so that the values know nothing of their bytes.

extension OutboxStatus {
    /// The status's code in a state record and a checkpoint (0…5).
    package var code: UInt8 {
        switch self {
        case .pending: 0
        case .inFlight: 1
        case .waitingToRetry: 2
        case .quarantined: 3
        case .conflict: 4
        case .succeeded: 5
        }
    }

    package init?(code: UInt8) {
        switch code {
        case 0: self = .pending
        case 1: self = .inFlight
        case 2: self = .waitingToRetry
        case 3: self = .quarantined
        case 4: self = .conflict
        case 5: self = .succeeded
        default: return nil
        }
    }
}

extension OutboxDependencyFailure {
    /// The failure's code in a state record and a checkpoint (1…6).
    package var code: UInt8 {
        switch self {
        case .quarantined: 1
        case .evicted: 2
        case .unknownToQueue: 3
        case .removed: 4
        case .discarded: 5
        case .gone: 6
        }
    }

    /// The failure a record's `code` and parent id stand for; `nil` for a
    /// code no store writes.
    package init?(code: UInt8, parent: OutboxEntryID) {
        switch code {
        case 1: self = .quarantined(parent)
        case 2: self = .evicted(parent)
        case 3: self = .unknownToQueue(parent)
        case 4: self = .removed(parent)
        case 5: self = .discarded(parent)
        case 6: self = .gone(parent)
        default: return nil
        }
    }
}
