import Foundation
import Outbox
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The first launch of an app: the outbox's root is below directories that
/// do not exist yet (iOS does not create Application Support; Linux's
/// `~/.local/share` may be missing), and when they cannot be created the
/// error says which one and what to do.
@Suite("First launch")
struct FirstLaunchTests {
    @Test("missing parents of the root are created, each with mode 0700, and the queue works")
    func createsMissingParents() async throws {
        let temporary = TemporaryRoot()
        let support = temporary.path.appending("Library").appending("Application Support")
        let root = support.appending("outbox")
        let store = try await LogOutboxStore.open(root: root, partition: "alice", configuration: quietConfiguration())
        let id = try await store.add(request(payload: "first"))
        try await store.close()

        for directory in [temporary.path.appending("Library"), support, root, root.appending("partitions")] {
            #expect(try mode(of: directory) == 0o700, "\(directory)")
        }
        let reopened = try await LogOutboxStore.open(root: root, partition: "alice", configuration: quietConfiguration())
        #expect(try await reopened.entry(id)?.payload == Array("first".utf8))
        try await reopened.close()
    }

    @Test("an existing parent keeps its mode")
    func existingParentUntouched() async throws {
        let temporary = TemporaryRoot()
        let shared = temporary.path.appending("shared")
        try FileManager.default.createDirectory(atPath: shared.string, withIntermediateDirectories: false)
        chmod(shared.string, 0o755)
        let store = try await LogOutboxStore.open(
            root: shared.appending("a").appending("outbox"), partition: "alice", configuration: quietConfiguration())
        try await store.close()
        #expect(try mode(of: shared) == 0o755)
        #expect(try mode(of: shared.appending("a")) == 0o700)
    }

    @Test("the directories it creates are durable before anything is written below them")
    func createdDirectoriesAreDurable() async throws {
        for mode in PowerLossMode.allCases {
            let disk = SimulatedFileSystem(directories: ["/data"])
            let configuration = quietConfiguration(on: disk)
            let root: FilePath = "/data/Library/Application Support/outbox"
            let store = try await LogOutboxStore.open(root: root, partition: "bob", configuration: configuration)
            for directory in ["/data/Library", "/data/Library/Application Support", root] as [FilePath] {
                #expect(disk.isDurable(directory), "\(directory)")
            }
            let id = try await store.add(request(payload: "survives"))
            disk.simulatePowerLoss(mode, seed: 3)
            let reopened = try await LogOutboxStore.open(root: root, partition: "bob", configuration: configuration)
            #expect(try await reopened.entry(id)?.payload == Array("survives".utf8), "\(mode)")
            try await reopened.close()
            withExtendedLifetime(store) {}
        }
    }

    @Test("a file in the way: the error names it and says what to do, and nothing is created")
    func fileInTheWay() async throws {
        let temporary = TemporaryRoot()
        let blocker = temporary.path.appending("Library")
        #expect(FileManager.default.createFile(atPath: blocker.string, contents: Data("not a folder".utf8)))
        let root = blocker.appending("Application Support").appending("outbox")
        let error = await #expect(throws: OutboxError.self) {
            try await LogOutboxStore.open(root: root, partition: "alice", configuration: quietConfiguration())
        }
        #expect(error?.code == .storage)
        #expect(error?.storage?.file == blocker)
        let text = error.map(String.init(describing:)) ?? ""
        #expect(text.contains(blocker.string), "\(text)")
        #expect(text.contains(root.string), "\(text)")
        #expect(text.contains("a file is in the way; move it, or choose another location"), "\(text)")
        #expect(FileManager.default.contents(atPath: blocker.string) == Data("not a folder".utf8))

        // Once the user moves the file, the same call works.
        try FileManager.default.removeItem(atPath: blocker.string)
        let store = try await LogOutboxStore.open(root: root, partition: "alice", configuration: quietConfiguration())
        try await store.close()
    }

    @Test("a parent it may not create: the error names it, the errno, and the remedy")
    func permissionDenied() async throws {
        let temporary = TemporaryRoot()
        let forbidden = temporary.path.appending("srv")
        let root = forbidden.appending("app").appending("outbox")
        // Root ignores directory permissions, and CI runs as root: refuse the
        // mkdir through the file system seam instead of with chmod.
        let faults = FaultInjector()
        faults.install(
            FaultRule(
                failing: .createDirectory, repetition: .always, paths: .exactly(forbidden),
                effect: .fail(.permissionDenied)))
        var configuration = quietConfiguration()
        configuration.log.fileSystem = FaultInjectingFileSystem(wrapping: PosixFileSystem(), faults: faults)
        let error = await #expect(throws: OutboxError.self) {
            try await LogOutboxStore.open(root: root, partition: "alice", configuration: configuration)
        }
        #expect(error?.storage?.file == forbidden)
        #expect(error?.storage?.errno == .permissionDenied)
        let text = error.map(String.init(describing:)) ?? ""
        #expect(text.contains("cannot create this directory, needed for \(root)/partitions"), "\(text)")
        #expect(text.contains("this process may not write there"), "\(text)")
        #expect(!FileManager.default.fileExists(atPath: forbidden.string))
    }

    private func mode(of path: FilePath) throws -> mode_t {
        var info = stat()
        guard stat(path.string, &info) == 0 else { throw Errno(rawValue: errno) }
        return info.st_mode & 0o777
    }
}
