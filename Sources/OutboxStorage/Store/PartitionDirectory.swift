import Crypto
import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

/// Where each user's queue lives, under a name that does not tell whose it is.
///
/// ```
/// <root>/SALT                              32 random bytes (0600): the naming key of an unencrypted root
/// <root>/SALT.lock                         empty; locked while the salt is created (RootSalt)
/// <root>/partitions/outbox+<32 hex>/       a user's queue (an OutboxLog directory)
/// <root>/partitions/outbox+<32 hex>/PARTITION   the user's name: plain, or sealed under the app's key
/// ```
///
/// The hex is 16 bytes of HMAC-SHA256 of the user's name, keyed with a key
/// derived from the app's encryption key when there is one, and with the
/// root's random salt when there is none. Without the key (or, for an
/// unencrypted root, without guessing the name) a path says nothing about
/// whose queue it is; an app that knows its key lists its users through the
/// `PARTITION` files, which open only with that key.
enum PartitionDirectory {
    static let prefix = "outbox+"
    static let saltName = "SALT"
    static let nameFileName = "PARTITION"
    /// In a queue that replaced another (a re-key, the sealing of a plain
    /// queue): the directory name of the queue it replaced, until that one
    /// is deleted. Names only `outbox+<hex>` directories.
    static let previousFileName = "PREVIOUS"

    static func partitionsDirectory(_ root: FilePath) -> FilePath { root.appending("partitions") }

    /// The directory name of `partition`'s queue under `naming`.
    static func name(_ partition: String, naming: KeyedNaming) -> String {
        prefix + LowercaseHex.encode(naming.digest("swift-outbox partition directory", partition.utf8))
    }

    static func path(root: FilePath, name: String) -> FilePath { partitionsDirectory(root).appending(name) }

    // MARK: Naming keys

    /// The naming key of `root`: derived from `key` if there is one, else the
    /// root's salt, created (0600, synced) if `create` is set and there is
    /// none; `nil` if there is none and `create` is not set. Blocking.
    static func naming(
        root: FilePath, key: SymmetricKey?, fileSystem: any FileSystem, create: Bool
    ) throws(OutboxError) -> KeyedNaming? {
        if let key { return RecordSealer(key: key).naming }
        let path = root.appending(saltName)
        if let salt = try SmallFile.read(path, fileSystem: fileSystem) {
            guard salt.count == 32 else {
                throw OutboxError(.corruptEntry, "\(path): the outbox root's salt has \(salt.count) bytes, not 32")
            }
            return KeyedNaming(key: SymmetricKey(data: salt))
        }
        guard create else { return nil }
        // Another process may create it at the same moment: one creates it, under a lock.
        let written = try RootSalt.create(at: path, fileSystem: fileSystem)
        guard written.count == 32 else {
            throw OutboxError(.corruptEntry, "\(path): the outbox root's salt has \(written.count) bytes, not 32")
        }
        return KeyedNaming(key: SymmetricKey(data: written))
    }

    // MARK: The name file

    /// Writes the `PARTITION` file of a queue's directory (once: an existing
    /// one is kept). Blocking.
    /// `name` is the directory's final name (a copy is built under another).
    static func writeName(
        _ partition: String, directory: FilePath, name: String? = nil, key: SymmetricKey?, fileSystem: any FileSystem
    ) throws(OutboxError) {
        let path = directory.appending(nameFileName)
        if try SmallFile.read(path, fileSystem: fileSystem) != nil { return }
        var contents = Array(partition.utf8)
        if let key {
            let binding = Array((name ?? directory.lastComponent?.string ?? "").utf8)
            contents = [RecordFormat.sealedMarker]
                + (try RecordSealer(key: key).seal(contents, .partitionName, partition: "", binding: binding))
        }
        try SmallFile.write(contents, to: path, fileSystem: fileSystem, replacing: true)
    }

    /// The user whose queue is in `directory`, if its `PARTITION` file says
    /// so in the clear or opens with `key`, and names this directory.
    static func readName(directory: FilePath, key: SymmetricKey?, naming: KeyedNaming?, fileSystem: any FileSystem)
        -> String?
    {
        guard let component = directory.lastComponent?.string,
            let contents = try? SmallFile.read(directory.appending(nameFileName), fileSystem: fileSystem)
        else { return nil }
        var plain = contents
        if contents.first == RecordFormat.sealedMarker {
            guard let key,
                let opened = try? RecordSealer(key: key).open(
                    contents.dropFirst(), .partitionName, partition: "", binding: Array(component.utf8))
            else { return nil }
            plain = opened
        }
        guard let partition = String(checkedUTF8: plain), let naming,
            name(partition, naming: naming) == component
        else { return nil }
        return partition
    }

    // MARK: Listing

    /// The partitions under `root` this caller can name: with `key`, the
    /// queues sealed under it; without, the unencrypted ones. Blocking.
    static func list(root: FilePath, key: SymmetricKey?, fileSystem: any FileSystem) -> [String] {
        let names = (try? fileSystem.contentsOfDirectory(partitionsDirectory(root))) ?? []
        let naming = try? naming(root: root, key: key, fileSystem: fileSystem, create: false)
        var result: Set<String> = []
        for name in names {
            guard name.hasPrefix(prefix) else { continue }
            let directory = path(root: root, name: name)
            if let partition = readName(directory: directory, key: key, naming: naming, fileSystem: fileSystem) {
                result.insert(partition)
            }
        }
        return result.sorted()
    }

    /// Whether some queue under `root` has a sealed name file. Blocking.
    static func holdsSealedQueues(root: FilePath, fileSystem: any FileSystem) -> Bool {
        sealedNameFiles(root: root, fileSystem: fileSystem).isEmpty == false
    }

    /// The sealed name files under `root`, by directory name. Blocking.
    static func sealedNameFiles(root: FilePath, fileSystem: any FileSystem) -> [(directory: String, contents: [UInt8])] {
        let names = (try? fileSystem.contentsOfDirectory(partitionsDirectory(root))) ?? []
        return names.compactMap { name in
            guard name.hasPrefix(prefix), !name.hasSuffix(PartitionRewrite.temporarySuffix),
                let contents = try? SmallFile.read(path(root: root, name: name).appending(nameFileName), fileSystem: fileSystem),
                contents.first == RecordFormat.sealedMarker
            else { return nil }
            return (name, contents)
        }
    }
}
