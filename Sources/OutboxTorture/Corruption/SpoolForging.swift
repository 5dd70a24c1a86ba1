import Outbox
import OutboxLog
import Crypto
import Foundation
import SystemPackage

/// For test drivers (`outbox torture --mode corrupt`): a spool holding
/// records no writer writes — a crafted extension, or a writer of another
/// version — built the way a writer builds its records (each body prepared
/// by ``LogBackend/prepare(_:format:)``, the spool written by
/// ``SpoolWriter``), so that their CRCs hold, and, in a sealed queue, they
/// are sealed under the queue's key. The owner must set each such record
/// aside and move the rest of its spool in (Docs/OUTBOX.md, "What the
/// queue can never take is set aside").
package enum SpoolForging {
    /// What is wrong with a forged record.
    package enum Forgery: String, Sendable, CaseIterable {
        case createdAtMaximum = "created at Int64.max ms"
        case createdAtMinimum = "created at Int64.min ms"
        case noAttempts = "maxAttempts 0"
        case dependsOnItself = "depends on itself"
        case tooManyDependencies = "1,025 dependencies"
        case emptyType = "empty type"
        case badMethod = "a method that is no HTTP token"
        case otherPartition = "another partition's body"
        case namesAPayloadFile = "names a payload file"
        case keyOfAnotherEntry = "stored under another entry's key"
        case undecodable = "bytes that decode as no body"
        /// A sequence number no queue assigns. Harmless — the queue numbers
        /// what it takes — so the record may be taken as well as set aside.
        case sequenceMaximum = "sequence number 2^64-1"

        /// Whether no queue may take the record (``sequenceMaximum`` may be taken).
        package var mustBeSetAside: Bool { self != .sequenceMaximum }
    }

    /// Writes a new spool into `spools` (`<root>/spools/outbox+<hex>`, the
    /// spools of `partition`'s queue) holding `records` in order, each
    /// forged as its second element says (`nil`: as any writer writes it),
    /// sealed if `configuration` has a key. Returns the spool's directory
    /// name, `spool+<hex>`.
    package static func write(
        _ records: [(OutboxEnqueueRequest, Forgery?)], partition: String, spools: FilePath,
        configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) -> String {
        let format = RecordFormat(partition: partition, key: configuration.encryptionKey)
        let now = Date().milliseconds
        var bodies: [PreparedBody] = []
        for (request, forgery) in records {
            let prepared = try PreparedBody.forLog(
                request, partition: partition, format: format, configuration: configuration, now: now)
            bodies.append(try forgery.map { forgery throws(OutboxError) in try forge(prepared, forgery, format: format) } ?? prepared)
        }
        return try await SpoolWriter.write(bodies, format: format, spools: spools, configuration: configuration).description
    }

    private static func forge(_ prepared: PreparedBody, _ forgery: Forgery, format: RecordFormat) throws(OutboxError) -> PreparedBody {
        var body = prepared.body
        switch forgery {
        case .createdAtMaximum: body.createdAt = .max
        case .createdAtMinimum: body.createdAt = .min
        case .noAttempts: body.maxAttempts = 0
        case .dependsOnItself: body.dependencies = [body.id]
        case .tooManyDependencies: body.dependencies = (0...OutboxLimits.maximumDependencies).map { _ in OutboxEntryID() }
        case .emptyType: body.type = ""
        case .badMethod: body.method = "GET /x"
        case .otherPartition: body.partition += "-other"
        case .sequenceMaximum: body.sequence = .max
        case .namesAPayloadFile:
            body.payloadFile = PayloadFileReference(
                layout: format.isSealed ? .sealed : .plain, fileID: (0..<16).map { _ in UInt8.random(in: 0 ... .max) },
                length: UInt64(max(1, body.payload.count)), chunkSize: format.isSealed ? 65_536 : 0,
                digest: Array(SHA256.hash(data: body.payload)))
            body.payload = []
        case .keyOfAnotherEntry:
            // The record of this body, under another id's key.
            var moved = prepared
            moved.body.id = OutboxEntryID()
            return moved
        case .undecodable:
            var garbage = prepared
            garbage.encoded = (0..<(8 + (prepared.encoded?.count ?? 0) / 2)).map { _ in UInt8.random(in: 0 ... .max) }
            return garbage
        }
        return try PreparedBody.forLog(body, format: format)
    }
}
