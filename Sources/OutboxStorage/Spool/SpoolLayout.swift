import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

/// Where the spools of a queue live (Docs/OUTBOX.md, "Enqueue from another process").
///
/// ```
/// <root>/spools/outbox+<32 hex>/                     the spools of the queue partitions/outbox+<32 hex>
/// <root>/spools/outbox+<32 hex>/spool+<32 hex>/      one writer's spool: an OutboxLog directory
/// <root>/spools/outbox+<32 hex>/spool+<32 hex>.lock  its guard: locked by the writer from before the directory exists
/// <root>/spools/outbox+<32 hex>/POKE                 created by a writer after it closed its spool
/// ```
///
/// The queue's directory name is a keyed hash (``PartitionDirectory``), so
/// its spools say no more about whose queue they feed than the queue does.
/// A spool's name is 16 random bytes, drawn by the writer for each spool
/// it creates: a name is never used twice, so a spool the owner deleted is
/// never written again, and the queue's mark of how far it ingested a
/// spool (``SpoolMark``) always describes that spool's one history.
package enum SpoolLayout {
    static let spoolsName = "spools"
    package static let spoolPrefix = "spool+"
    package static let pokeName = "POKE"

    /// The directory of the spools of the queue named `queueName` (an
    /// `outbox+<hex>` name) under `root`.
    static func directory(root: FilePath, queueName: String) -> FilePath {
        root.appending(spoolsName).appending(queueName)
    }

    /// The spools of the queue in `queueDirectory` (`<root>/partitions/outbox+<hex>`).
    static func directory(ofQueue queueDirectory: FilePath) -> FilePath {
        let root = queueDirectory.removingLastComponent().removingLastComponent()
        return directory(root: root, queueName: queueDirectory.lastComponent?.string ?? "")
    }

    static func path(_ spools: FilePath, _ id: SpoolID) -> FilePath { spools.appending(spoolPrefix + id.hex) }

    static func poke(_ spools: FilePath) -> FilePath { spools.appending(pokeName) }

    /// The spool's guard, `spool+<hex>.lock` beside its directory: its writer
    /// locks it *before* it creates the directory and releases it once the
    /// spool is closed, so an owner that sees the directory and can take
    /// the guard knows no writer will touch the spool again (done, or
    /// killed). The owner deletes it with the spool.
    static func guardPath(_ spools: FilePath, _ id: SpoolID) -> FilePath { spools.appending(spoolPrefix + id.hex + guardSuffix) }
    package static let guardSuffix = ".lock"

    /// Takes a spool's guard; `nil` if another holds it. Blocking.
    static func takeGuard(_ spools: FilePath, _ id: SpoolID, fileSystem: any FileSystem) throws(OutboxError) -> FileDescriptor? {
        let path = guardPath(spools, id)
        do { return try fileSystem.openAndLock(path) } catch where error == .wouldBlock || error == .resourceTemporarilyUnavailable {
            return nil
        } catch {
            throw .storage(OutboxLogError(.io, "cannot lock a spool's guard", file: path, errno: error))
        }
    }

    /// The guards in `spools` whose spool directory is gone (an owner died
    /// between deleting a spool and its guard). Blocking.
    static func orphanGuards(_ spools: FilePath, fileSystem: any FileSystem) -> [SpoolID] {
        let names = Set((try? fileSystem.contentsOfDirectory(spools)) ?? [])
        return names.compactMap { name in
            guard let id = spoolID(fromGuardName: name), !names.contains(spoolPrefix + id.hex) else { return nil }
            return id
        }
    }

    /// The spool a directory entry named `name` is (`spool+<32 hex>`), if it is one.
    package static func spoolID(fromName name: String) -> SpoolID? {
        guard name.hasPrefix(spoolPrefix) else { return nil }
        return SpoolID(hex: String(name.dropFirst(spoolPrefix.count)))
    }

    /// The spool whose guard is named `name` (`spool+<32 hex>.lock`), if it is one.
    package static func spoolID(fromGuardName name: String) -> SpoolID? {
        guard name.hasSuffix(guardSuffix) else { return nil }
        return spoolID(fromName: String(name.dropLast(guardSuffix.count)))
    }

    /// Deletes the spools of the queue in `queueDirectory` (a purge at
    /// logout: what was spooled for the user goes with the queue). Fails
    /// with `.busy` if a writer is writing one at this moment.
    static func purge(ofQueue queueDirectory: FilePath, fileSystem: any FileSystem) async throws(OutboxError) {
        try await purge(spools: directory(ofQueue: queueDirectory), fileSystem: fileSystem)
    }

    /// Deletes the spools in `spools`, then the directory; `.busy` if a
    /// writer is writing one at this moment.
    static func purge(spools: FilePath, fileSystem: any FileSystem) async throws(OutboxError) {
        let ids = try await offThePool { () throws(OutboxError) -> [SpoolID] in try list(spools, fileSystem: fileSystem) }
        for id in ids {
            defer { try? fileSystem.removeFile(guardPath(spools, id)) }
            do { try await OutboxLog.destroy(at: path(spools, id), fileSystem: fileSystem) } catch where error.code == .locked {
                throw OutboxError(.busy, "a process is writing a spool of this queue; try again", storage: error)
            } catch {
                throw .storage(error)
            }
        }
        _ = try? await offThePool { () throws(OutboxError) in
            for id in orphanGuards(spools, fileSystem: fileSystem) { try? fileSystem.removeFile(guardPath(spools, id)) }
            try? fileSystem.removeFile(poke(spools))
            try? fileSystem.removeDirectory(spools)
        }
    }

    /// The spools in `spools`, by name (names that are not spools are left alone). Blocking.
    static func list(_ spools: FilePath, fileSystem: any FileSystem) throws(OutboxError) -> [SpoolID] {
        let names: [String]
        do { names = try fileSystem.contentsOfDirectory(spools) } catch where error == .noSuchFileOrDirectory {
            return []
        } catch {
            throw .storage(OutboxLogError(.io, "cannot list the spools", file: spools, errno: error))
        }
        return names.compactMap(spoolID(fromName:)).sorted { $0.hex < $1.hex }
    }
}

/// A spool's name: 16 bytes, the first 6 the moment it was created (ms
/// since 1970, big-endian), the other 10 random. Names sort as spools
/// were created, so a look takes the oldest first.
package struct SpoolID: Hashable, Sendable, CustomStringConvertible {
    package let bytes: [UInt8]

    static func random(now: Date = Date()) -> SpoolID {
        var generator = SystemRandomNumberGenerator()
        let milliseconds = UInt64(clamping: max(0, now.milliseconds))
        let time = (0..<6).reversed().map { UInt8(truncatingIfNeeded: milliseconds >> (8 * UInt64($0))) }
        return SpoolID(bytes: time + (0..<10).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    package init(bytes: [UInt8]) { self.bytes = bytes }

    /// The spool named by `hex`, if it is 32 lowercase hex digits.
    package init?(hex: String) {
        guard let bytes = LowercaseHex.decode(hex, count: 16) else { return nil }
        self.bytes = bytes
    }

    package var hex: String { LowercaseHex.encode(bytes) }
    package var description: String { SpoolLayout.spoolPrefix + hex }
}

/// The queue's record of how far it has ingested one spool: key `S` and
/// the spool's 16-byte name, value the u64 (little-endian) sequence number
/// of the last spool record whose entry the queue holds. It is written in
/// the same log batch as that entry, so the queue holds an ingested entry
/// exactly when its mark covers it: a crash anywhere re-ingests nothing the
/// queue holds and skips nothing it does not. It is deleted (a tombstone)
/// once the spool itself is deleted.
///
/// The mark is not sealed in an encrypted queue: a random name and a count
/// of records say nothing the app or its server wrote (Docs/SECURITY.md).
package enum SpoolMark {
    static let prefix: UInt8 = 0x53  // "S"

    static func key(_ spool: SpoolID) -> LogKey { LogKey([prefix] + spool.bytes) }

    package static func write(_ spool: SpoolID, through sequence: UInt64) -> LogWrite {
        .value(key(spool), withUnsafeBytes(of: sequence.littleEndian) { Array($0) })
    }

    /// The sequence a mark's value records; `nil` if it is not 8 bytes.
    package static func sequence(_ value: [UInt8]) -> UInt64? {
        guard value.count == 8 else { return nil }
        return value.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
    }
}
