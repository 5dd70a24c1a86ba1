import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `OutboxLog.open` creates the log's directory with any missing parents,
/// names the path and the remedy when it cannot, and takes the directory as
/// a `FilePath`, a `String` or a file `URL`.
@Suite("Log directory creation")
struct DirectoryCreationTests {
    @Test("missing parents are created with mode 0700, and the log works")
    func createsParents() async throws {
        let temporary = TemporaryDirectory()
        let directory = temporary.appending("var").appending("lib").appending("queue")
        let log = try await OutboxLog.open(at: directory, configuration: testConfiguration())
        try await log.put("k", [1, 2, 3], durability: .durable)
        try await log.close()
        for path in [temporary.appending("var"), temporary.appending("var").appending("lib"), directory] {
            var info = stat()
            #expect(stat(path.string, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o700, "\(path)")
        }
        let reopened = try await OutboxLog.open(at: directory, configuration: testConfiguration())
        #expect(try await reopened.get("k")?.value == [1, 2, 3])
        try await reopened.close()
    }

    @Test("a relative directory of one component opens in the working directory")
    func relativeDirectory() async throws {
        let temporary = TemporaryDirectory()
        // The working directory is the process's: change it in a child.
        await #expect(processExitsWith: .success) { [path = temporary.path.string as String] in
            guard chdir(path) == 0 else { exit(2) }
            let log = try await OutboxLog.open(at: "queue", configuration: testConfiguration())
            try await log.put("k", [7], durability: .durable)
            try await log.close()
            try await OutboxLog.destroy(at: "queue")
            exit(FileManager.default.fileExists(atPath: "queue") ? 3 : 0)
        }
    }

    @Test("a parent created by another process between the check and the mkdir is accepted")
    func parentCreatedConcurrently() async throws {
        let temporary = TemporaryDirectory()
        let parent = temporary.appending("shared")
        let posix = PosixFileSystem()
        var configuration = testConfiguration()
        configuration.fileSystem = HookedFileSystem(base: posix) { operation, paths in
            if operation == .createDirectory, paths == [parent] { try? posix.createDirectory(parent) }  // the other process wins
            return nil
        }
        let log = try await OutboxLog.open(at: parent.appending("queue"), configuration: configuration)
        try await log.close()
        #expect(FileManager.default.fileExists(atPath: parent.appending("queue").string))
    }

    @Test("a file in the way: the error names it, the log's directory, and the remedy")
    func fileInTheWay() async throws {
        let temporary = TemporaryDirectory()
        let blocker = temporary.appending("data")
        #expect(FileManager.default.createFile(atPath: blocker.string, contents: Data([1])))
        let directory = blocker.appending("queue")
        let error = await #expect(throws: OutboxLogError.self) {
            try await OutboxLog.open(at: directory, configuration: testConfiguration())
        }
        #expect(error?.code == .io)
        #expect(error?.file == blocker)
        #expect(error?.errno == .notDirectory)
        #expect(error?.message == "cannot create this directory, needed for \(directory): a file is in the way; move it, or choose another location")
    }

    @Test("String and file URL directories open the same log as FilePath")
    func stringAndURL() async throws {
        let temporary = TemporaryDirectory()
        let directory = temporary.appending("queue")
        let first = try await OutboxLog.open(at: directory.string, configuration: testConfiguration())
        try await first.put("k", [1], durability: .durable)
        try await first.close()
        let second = try await OutboxLog.open(at: URL(fileURLWithPath: directory.string), configuration: testConfiguration())
        #expect(try await second.get("k")?.value == [1])
        #expect(second.directory == directory)
        try await second.close()
        try await OutboxLog.destroy(at: URL(fileURLWithPath: directory.string))
        #expect(!FileManager.default.fileExists(atPath: directory.string))
        try await OutboxLog.destroy(at: directory.string)  // gone already: succeeds
    }

    @Test("a URL that is not a file URL, and an empty path, are refused and create nothing")
    func refusedDirectories() async throws {
        let web = await #expect(throws: OutboxLogError.self) {
            try await OutboxLog.open(at: URL(string: "https://example.com/queue")!, configuration: testConfiguration())
        }
        #expect(web?.code == .invalidArgument)
        #expect(web?.message.contains("https://example.com/queue") == true)
        let empty = await #expect(throws: OutboxLogError.self) {
            try await OutboxLog.open(at: "", configuration: testConfiguration())
        }
        #expect(empty?.code == .invalidArgument)
        let emptyPath = await #expect(throws: OutboxLogError.self) {
            try await OutboxLog.open(at: FilePath(), configuration: testConfiguration())
        }
        #expect(emptyPath?.code == .invalidArgument)
        #expect(!FileManager.default.fileExists(atPath: "LOCK"))
    }
}
