import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// The entry codec decodes exactly what it encodes, and refuses everything
/// else as a corrupt entry — found by the `entry` fuzz target (Fuzz/), whose
/// inputs are in Fuzz/regressions/entry. Before, each of these decoded,
/// silently dropping or normalising bytes the log's CRC vouched for.
@Suite("Entry codec")
struct EntryCodecTests {
    static let body = EntryBody(
        id: OutboxEntryID(bytes: Array(1...16)), sequence: 9, createdAt: 1_000, priority: 1, maxAttempts: 5, type: "t",
        scope: nil, coalescingKey: nil, partition: "p", dependencies: [], idempotencyKey: "k", keySuppliedByApp: true, method: "POST",
        endpoint: "/e", headers: ["A": "1", "B": "2"], payload: [7, 7])

    static func state(httpStatus: Int?, message: String?, firstAnsweredAt: Int64? = nil) -> [UInt8] {
        let metadata = EntryMetadata(
            id: body.id, sequence: 9, status: .waitingToRetry, priority: 1, attempts: 2, maxAttempts: 5, scope: 0, type: 0,
            coalescing: 0, when: 5_000, createdAt: 1_000, storedBytes: 0, dependencies: nil)
        return EntryCodec.encodeState(metadata, failure: FailureInfo(
                last: message == nil && httpStatus == nil ? nil : OutboxFailure(.transient, httpStatus: httpStatus, message: message),
                firstAnsweredAt: firstAnsweredAt))
    }

    static func refused(_ decode: () throws(OutboxError) -> Void) -> Bool {
        do {
            try decode()
            return false
        } catch {
            return error.code == .corruptEntry
        }
    }

    @Test("what encoding writes decodes back to the same value")
    func roundTrip() throws {
        #expect(try EntryCodec.decode(EntryCodec.encode(Self.body)) == Self.body)
        let completion = Completion(serverID: "s/1", syncedAt: 3)
        #expect(try EntryCodec.decodeCompletion(EntryCodec.encodeCompletion(completion)) == completion)
        let state = try EntryCodec.decodeState(Self.state(httpStatus: 503, message: "busy"))
        #expect(state.failure == FailureInfo(last: OutboxFailure(.transient, httpStatus: 503, message: "busy")))
        let answered = try EntryCodec.decodeState(Self.state(httpStatus: 409, message: nil, firstAnsweredAt: 4_000))
        #expect(answered.failure == FailureInfo(last: OutboxFailure(.transient, httpStatus: 409), firstAnsweredAt: 4_000))
        let keyed = Completion(serverID: nil, syncedAt: 3, idempotencyKey: "order-9")
        #expect(try EntryCodec.decodeCompletion(EntryCodec.encodeCompletion(keyed)) == keyed)
    }

    @Test("a byte left over after a body, a state or a completion is corruption")
    func trailingBytes() throws {
        let body = try EntryCodec.encode(Self.body)
        #expect(Self.refused { () throws(OutboxError) in _ = try EntryCodec.decode(body + [0]) })
        #expect(Self.refused { () throws(OutboxError) in _ = try EntryCodec.decodeState(Self.state(httpStatus: nil, message: nil) + [0]) })
        let answered = Self.state(httpStatus: nil, message: nil, firstAnsweredAt: 4_000)
        #expect(Self.refused { () throws(OutboxError) in _ = try EntryCodec.decodeState(answered + [0]) })
        let completion = EntryCodec.encodeCompletion(Completion(serverID: nil, syncedAt: 3))
        #expect(Self.refused { () throws(OutboxError) in _ = try EntryCodec.decodeCompletion(completion + [0]) })
        let keyed = EntryCodec.encodeCompletion(Completion(serverID: nil, syncedAt: 3, idempotencyKey: "order-9"))
        #expect(Self.refused { () throws(OutboxError) in _ = try EntryCodec.decodeCompletion(keyed + [0]) })
    }

    @Test("a version 2 completion without its key is corruption: version 2 is written only to keep a key")
    func completionVersionWithoutKey() throws {
        var bytes = EntryCodec.encodeCompletion(Completion(serverID: nil, syncedAt: 3))
        bytes[0] = EntryCodec.completionVersion
        bytes.append(0)  // the key's presence flag: absent
        #expect(Self.refused { () throws(OutboxError) in _ = try EntryCodec.decodeCompletion(bytes) })
    }

    @Test("an unknown flag (bit 0 included: no body is sealed in place), a presence flag other than 0 or 1, or an HTTP status below -1 is corruption")
    func unknownValues() throws {
        for flag: UInt8 in [0x80, 0x01] {
            var body = EntryCodec.encode(Self.body)
            body[1] |= flag
            #expect(Self.refused { () throws(OutboxError) in _ = try EntryCodec.decodeHeader(body) })
            #expect(Self.refused { () throws(OutboxError) in _ = try EntryCodec.decode(body) })
        }
        var completion = EntryCodec.encodeCompletion(Completion(serverID: "s", syncedAt: 3))
        completion[9] = 2
        #expect(Self.refused { () throws(OutboxError) in _ = try EntryCodec.decodeCompletion(completion) })
        #expect(Self.refused { () throws(OutboxError) in _ = try EntryCodec.decodeState(Self.state(httpStatus: -2, message: nil)) })
    }

    @Test("a repeated header name is corruption: decoding it would keep one value and drop the other")
    func repeatedHeader() throws {
        let twice = try EntryCodec.encode(Self.body)
        // Rename header "B" to "A": same length, so only the name changes.
        let b = try #require(twice.lastIndex(of: UInt8(ascii: "B")))
        var repeated = twice
        repeated[b] = UInt8(ascii: "A")
        #expect(Self.refused { () throws(OutboxError) in _ = try EntryCodec.decode(repeated) })
    }

    @Test("an error message longer than the 2,048 characters encoding keeps is corruption")
    func longMessage() throws {
        let kept = String(repeating: "e", count: 2048)
        #expect(try EntryCodec.decodeState(Self.state(httpStatus: nil, message: kept)).failure?.last?.message == kept)
        var long = Self.state(httpStatus: nil, message: kept)
        // Grow the message by one character past the limit: length prefix and bytes.
        long.append(UInt8(ascii: "e"))
        let lengthOffset = long.count - 1 - kept.utf8.count - 4
        long.withUnsafeMutableBytes { $0.storeBytes(of: UInt32(kept.utf8.count + 1).littleEndian, toByteOffset: lengthOffset, as: UInt32.self) }
        #expect(Self.refused { () throws(OutboxError) in _ = try EntryCodec.decodeState(long) })
    }
}
