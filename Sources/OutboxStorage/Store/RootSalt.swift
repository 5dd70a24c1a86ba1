import Crypto
import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

/// Creating an unencrypted root's salt (its naming key), once, whatever
/// processes open the new root at the same moment (an app and its
/// extension at first launch, two users' queues).
///
/// The salt is written through `SALT.tmp` and a rename, under an exclusive
/// lock on `SALT.lock` (a POSIX record lock, released if the process dies):
/// without it, a second creator deleted and replaced the first one's
/// temporary file, so that the first failed — or a salt was renamed over
/// one a queue was already named with, orphaning that queue.
enum RootSalt {
    static let lockName = "SALT.lock"

    /// The salt at `path`, created (32 random bytes, 0600, synced) if there
    /// is none. Blocking: waits up to ``patience`` for another creator's lock.
    static func create(at path: FilePath, fileSystem: any FileSystem) throws(OutboxError) -> [UInt8] {
        let lockPath = path.removingLastComponent().appending(lockName)
        let lock = try acquire(lockPath, fileSystem: fileSystem)
        defer { try? fileSystem.close(lock) }
        if let salt = try SmallFile.read(path, fileSystem: fileSystem) { return salt }
        let salt = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        try SmallFile.write(salt, to: path, fileSystem: fileSystem, replacing: false)
        guard let written = try SmallFile.read(path, fileSystem: fileSystem) else {
            throw OutboxError(.corruptEntry, "\(path): the outbox root's salt could not be read back")
        }
        return written
    }

    /// How long an open waits for another process creating the salt. The
    /// lock is released when its holder ends, killed or not, so a held lock
    /// means a live creator: one whose syncs are slow on a busy disk (10 s
    /// was not enough on a machine compiling beside it).
    static let patience: TimeInterval = 60

    private static func acquire(_ lockPath: FilePath, fileSystem: any FileSystem) throws(OutboxError) -> FileDescriptor {
        let deadline = Date().addingTimeInterval(patience)
        while true {
            do { return try fileSystem.openAndLock(lockPath) } catch where error == .wouldBlock || error == .resourceTemporarilyUnavailable {
                guard Date() < deadline else {
                    throw OutboxError(.busy, "\(lockPath): another process has been creating the outbox root's salt for \(Int(patience)) s")
                }
                usleep(1000)
            } catch {
                throw .storage(OutboxLogError(.io, "cannot lock the outbox root's salt", file: lockPath, errno: error))
            }
        }
    }
}
