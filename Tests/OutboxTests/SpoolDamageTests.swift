import Foundation
import Outbox
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Spools an outside reviewer would hand the owner to break it: damaged on
/// disk, or sealed under another key. Each is reported with its file and
/// reason, kept as is, and moves nothing in; the queue stays usable. A
/// writer without the queue's key writes no spool at all. And the spools'
/// files are the owner's alone.
@Suite("Damaged and foreign spools")
struct SpoolDamageTests {
    static let root = SpoolTests.root

    /// Writes `texts` into a spool while `owner` holds the queue; returns the spool's files.
    static func spool(
        _ texts: [String], configuration: OutboxStoreConfiguration, fileSystem: SimulatedFileSystem
    ) async throws -> [FilePath] {
        let requests = texts.map { SpoolTests.request($0) }
        let result = try await LogOutboxStore.enqueue(requests, root: root, partition: "alice", configuration: configuration)
        guard case .spooled = result else { throw OutboxError(.invalidArgument, "not spooled: \(result)") }
        return fileSystem.allFiles().filter { $0.string.contains("/spool+") && $0.extension == "seg" }
    }

    /// What the owner's queue holds, and the spool files: unchanged by a refused look.
    static func expectNothingMoved(
        _ owner: LogOutboxStore, _ report: OutboxSpoolReport, code: OutboxError.Code, spoolFiles: [FilePath: [UInt8]],
        fileSystem: SimulatedFileSystem
    ) async throws {
        #expect(report.ingested == 0 && report.spoolsDeleted == 0, "\(report)")
        #expect(report.problems.count == 1, "\(report)")
        #expect(report.problems.first?.kind == .unusable && report.problems.first?.error.code == code, "\(report)")
        #expect(report.problems.first?.path.string.contains("/spool+") == true, "no file in: \(report)")
        #expect(try await owner.summary().unsent == 1)  // the owner's own entry only
        for (file, bytes) in spoolFiles { #expect(fileSystem.contents(of: file) == bytes, "\(file) changed") }
        // Still usable: it takes a write, and a sound spool, after refusing the bad one.
        guard case .enqueued = try await owner.enqueue(SpoolTests.request("after")) else {
            Issue.record("the store refused a write after a bad spool")
            return
        }
    }

    @Test("a spool with a flipped bit in an early record is reported, kept byte for byte, and moves nothing in")
    func corruptSpool() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = SpoolTests.configuration(fileSystem)
        let owner = try await SpoolTests.open(configuration)
        _ = try await owner.enqueue(SpoolTests.request("own"))
        let files = try await Self.spool(["first-entry", "second-entry", "third-entry"], configuration: configuration, fileSystem: fileSystem)
        let segment = try #require(files.first)
        let bytes = try #require(fileSystem.contents(of: segment))
        // Inside the first entry's payload: two sound records follow it.
        let offset = try #require(Self.offset(of: "first-entry", in: bytes))
        try fileSystem.flipBit(inFile: segment, atByte: offset + 2)
        let damaged = try #require(fileSystem.contents(of: segment))

        let report = try await owner.ingestSpools()
        try await Self.expectNothingMoved(owner, report, code: .storage, spoolFiles: [segment: damaged], fileSystem: fileSystem)
        #expect(try await owner.entries(matching: OutboxFilter()).allSatisfy { $0.payload != Array("second-entry".utf8) })
        // A later look refuses it the same way; it is never half moved in.
        let again = try await owner.ingestSpools()
        #expect(again.ingested == 0 && again.problems.count == 1, "\(again)")
        try await owner.close()
    }

    @Test("a writer with another key, or with none, beside an encrypted queue is refused before it writes a spool")
    func writerWithoutTheKey() async throws {
        let fileSystem = SimulatedFileSystem()
        let owner = try await LogOutboxStore.open(
            root: Self.root, partition: "alice", configuration: SpoolTests.configuration(fileSystem, key: [UInt8](repeating: 1, count: 32)))
        for (key, code) in [([UInt8](repeating: 2, count: 32), OutboxError.Code.wrongKey), (nil, .keyRequired)] {
            let writer = SpoolTests.configuration(fileSystem, key: key)
            let error = await #expect(throws: OutboxError.self) {
                _ = try await LogOutboxStore.enqueue([SpoolTests.request("secret")], root: Self.root, partition: "alice", configuration: writer)
            }
            #expect(error?.code == code, "\(String(describing: error))")
        }
        // Nothing plain (or sealed under a stranger's key) reached the disk.
        #expect(!fileSystem.allFiles().contains { $0.string.contains("/spool+") })
        #expect(try await owner.summary().unsent == 0)
        try await owner.close()
    }

    @Test("a writer with a key beside a plain queue held open is refused (wrongKey), not spooled where the queue never looks")
    func keyedWriterBesidePlainHeldQueue() async throws {
        let fileSystem = SimulatedFileSystem()
        let owner = try await SpoolTests.open(SpoolTests.configuration(fileSystem))
        let writer = SpoolTests.configuration(fileSystem, key: [UInt8](repeating: 2, count: 32))
        // Free, its open would seal the plain queue; held, that cannot happen,
        // and a spool under the sealed queue's name would wait for a queue
        // that does not exist while the app runs.
        let error = await #expect(throws: OutboxError.self) {
            _ = try await LogOutboxStore.enqueue([SpoolTests.request("x")], root: Self.root, partition: "alice", configuration: writer)
        }
        #expect(error?.code == .wrongKey, "\(String(describing: error))")
        #expect(!fileSystem.allFiles().contains { $0.string.contains("/spool+") })
        #expect(try await owner.summary().unsent == 0)
        try await owner.close()
    }

    @Test("a spool sealed under another key (copied in from another root) is reported, kept, and moves nothing in")
    func spoolUnderAnotherKey() async throws {
        let fileSystem = SimulatedFileSystem()
        let owner = try await LogOutboxStore.open(
            root: Self.root, partition: "alice", configuration: SpoolTests.configuration(fileSystem, key: [UInt8](repeating: 1, count: 32)))
        _ = try await owner.enqueue(SpoolTests.request("own"))
        // A spool written for the same user's queue under another root and key.
        let otherRoot: FilePath = "/elsewhere/outbox"
        let other = SpoolTests.configuration(fileSystem, key: [UInt8](repeating: 2, count: 32))
        let otherOwner = try await LogOutboxStore.open(root: otherRoot, partition: "alice", configuration: other)
        guard case .spooled = try await LogOutboxStore.enqueue([SpoolTests.request("foreign")], root: otherRoot, partition: "alice", configuration: other)
        else { Issue.record("not spooled"); return }
        try await otherOwner.close()
        // The owner's queue directory names its spools' directory.
        let queue = try #require(fileSystem.allDirectories().first { $0.string.hasPrefix(Self.root.string + "/partitions/outbox+") })
        let ownSpools = Self.root.appending("spools").appending(try #require(queue.lastComponent))
        var copied: [FilePath: [UInt8]] = [:]
        for file in fileSystem.allFiles() where file.string.hasPrefix(otherRoot.string + "/spools/") && file.string.contains("/spool+") {
            guard let name = file.lastComponent, let parent = file.removingLastComponent().lastComponent else { continue }
            let target = parent.string.hasPrefix("spool+") ? ownSpools.appending(parent).appending(name) : ownSpools.appending(name)
            _ = try fileSystem.createDirectoryWithParents(target.removingLastComponent())
            try fileSystem.close(try fileSystem.openFile(target, mode: .createOrOpen))
            let bytes = fileSystem.contents(of: file) ?? []
            try fileSystem.setContents(of: target, to: bytes)
            copied[target] = bytes
        }
        #expect(copied.keys.contains { $0.extension == "seg" })

        let report = try await owner.ingestSpools()
        try await Self.expectNothingMoved(owner, report, code: .wrongKey, spoolFiles: copied, fileSystem: fileSystem)
        try await owner.close()
    }

    @Test("spools, their guards and the poke are 0600 files in 0700 directories", arguments: [false, true])
    func spoolFileModes(encrypted: Bool) async throws {
        let root = TemporaryRoot()
        let outbox = root.path.appending("outbox")
        var configuration = quietConfiguration()
        if encrypted { try configuration.setEncryptionKey([UInt8](repeating: 3, count: 32)) }
        let owner = try await LogOutboxStore.open(root: outbox, partition: "alice", configuration: configuration)
        let result = try await LogOutboxStore.enqueue(
            [SpoolTests.request("spooled")], root: outbox, partition: "alice", configuration: configuration)
        guard case .spooled = result else { Issue.record("not spooled: \(result)"); return }

        var paths = [outbox.string]
        let enumerator = try #require(FileManager.default.enumerator(atPath: outbox.string))
        while let relative = enumerator.nextObject() as? String { paths.append(outbox.string + "/" + relative) }
        #expect(paths.contains { $0.contains("/spool+") && $0.hasSuffix(".lock") }, "no guard in \(paths)")
        #expect(paths.contains { $0.hasSuffix("/POKE") }, "no poke in \(paths)")
        for path in paths {
            var info = stat()
            #expect(lstat(path, &info) == 0)
            let permissions = info.st_mode & 0o777
            let isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
            #expect(permissions == (isDirectory ? 0o700 : 0o600), "\(path): mode \(String(permissions, radix: 8))")
        }
        #expect(try await owner.ingestSpools().ingested == 1)
        try await owner.close()
    }

    /// Where `text` first occurs in `bytes`.
    static func offset(of text: String, in bytes: [UInt8]) -> Int? {
        let needle = Array(text.utf8)
        guard bytes.count >= needle.count else { return nil }
        return (0...(bytes.count - needle.count)).first { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
