import Outbox
import OutboxLog

/// Fuzz entry point for the entry codec: the bodies, states and completions
/// a store reads back from its log (see `FuzzViolation` and
/// Fuzz/README.md). A decode that succeeds must give back what the bytes
/// say — no part dropped, none invented: encoding the result again gives
/// the same bytes. (A sealed queue seals these encodings whole; the
/// `store-checkpoint` and `spool` targets reach the seal.)
///
/// Control byte, bits 0–1: 0 or 3 a body, 1 a state, 2 a completion.
package enum EntryCodecFuzzing {
    package static func entry(_ input: UnsafeRawBufferPointer) throws(FuzzViolation) {
        guard let input = FuzzInput(input) else { return }
        let bytes = Array(input.data)
        switch input.control & 3 {
        case 1: try state(bytes)
        case 2: try completion(bytes)
        default: try body(bytes)
        }
    }

    static func body(_ bytes: [UInt8]) throws(FuzzViolation) {
        guard let decoded = try? EntryCodec.decode(bytes) else { return }
        guard let header = try? EntryCodec.decodeHeader(bytes) else {
            throw FuzzViolation("a body decodes whole, but its scheduling header does not")
        }
        var scheduling = decoded
        (scheduling.endpoint, scheduling.headers, scheduling.payload) = ("", [:], [])
        guard header.body == scheduling else {
            throw FuzzViolation("the scheduling header decodes differently from the whole body: \(header.body) vs \(scheduling)")
        }
        if EntryCodec.encode(decoded) != bytes {
            throw FuzzViolation("a body decoded as \(decoded) encodes to different bytes")
        }
    }

    static func state(_ bytes: [UInt8]) throws(FuzzViolation) {
        guard let state = try? EntryCodec.decodeState(bytes) else { return }
        let metadata = EntryMetadata(
            id: OutboxEntryID(bytes: [UInt8](repeating: 0, count: 16)), sequence: 0, status: state.status, priority: 0,
            attempts: state.attempts, maxAttempts: 0, scope: 0, type: 0, coalescing: 0, when: state.when, createdAt: 0,
            storedBytes: 0, dependencies: nil)
        guard EntryCodec.encodeState(metadata, failure: state.failure) == bytes else {
            throw FuzzViolation("a state decoded as \(state) encodes to different bytes")
        }
    }

    static func completion(_ bytes: [UInt8]) throws(FuzzViolation) {
        guard let completion = try? EntryCodec.decodeCompletion(bytes) else { return }
        guard EntryCodec.encodeCompletion(completion) == bytes else {
            throw FuzzViolation("a completion decoded as \(completion) encodes to different bytes")
        }
    }
}

extension EntryCodecFuzzing {
    /// Seed inputs: a full and a bare body, states with each optional part, completions with and without an app's key.
    package static func seeds() throws -> [[UInt8]] {
        let id = OutboxEntryID(bytes: Array(1...16))
        let dependency = OutboxEntryID(bytes: Array(101...116))
        let body = EntryBody(
            id: id, sequence: 42, createdAt: 1_767_225_600_000, priority: 5, maxAttempts: 10, type: "send_message",
            scope: "conversation-7", coalescingKey: "draft-7", partition: "user-1", dependencies: [dependency],
            idempotencyKey: "3b2c1d4e-0000-4000-8000-00000000002a", keySuppliedByApp: true, method: "POST", endpoint: "/messages",
            headers: ["Content-Type": "application/json", "X-Trace": "a1"], payload: Array(#"{"text":"hi"}"#.utf8))
        var bare = body
        (bare.scope, bare.coalescingKey, bare.dependencies, bare.headers, bare.payload) = (nil, nil, [], [:], [])
        bare.keySuppliedByApp = false
        var seeds = [
            [0] + EntryCodec.encode(body),
            [0] + EntryCodec.encode(bare),
        ]
        let metadata = EntryMetadata(
            id: id, sequence: 42, status: .waitingToRetry, priority: 5, attempts: 3, maxAttempts: 10, scope: 0, type: 0, coalescing: 0,
            when: 1_767_225_660_000, createdAt: 1_767_225_600_000, storedBytes: 0, dependencies: nil)
        seeds.append([1] + EntryCodec.encodeState(metadata, failure: nil))
        seeds.append([1] + EntryCodec.encodeState(metadata, failure: FailureInfo(last: OutboxFailure(.unavailable, httpStatus: 503, message: "Service Unavailable"))))
        seeds.append([2] + EntryCodec.encodeCompletion(Completion(serverID: "msg/9", syncedAt: 1_767_225_700_000)))
        seeds.append(
            [1] + EntryCodec.encodeState(metadata, failure: FailureInfo(last: OutboxFailure(.inProgress, httpStatus: 409), firstAnsweredAt: 1_767_225_650_000)))
        seeds.append(
            [1] + EntryCodec.encodeState(
                metadata, failure: FailureInfo(
                    last: OutboxFailure(.dependency(.gone(dependency))), firstAnsweredAt: 1_767_225_650_000,
                    outcomeUnknownSince: 1_767_225_655_000)))
        seeds.append([2] + EntryCodec.encodeCompletion(Completion(serverID: nil, syncedAt: 1_767_225_700_000)))
        seeds.append(
            [2] + EntryCodec.encodeCompletion(Completion(serverID: "msg/9", syncedAt: 1_767_225_700_000, idempotencyKey: "order-9")))
        return seeds
    }
}
