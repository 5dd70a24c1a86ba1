import OutboxLocking
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Records every call that reaches the interception point; names each
/// descriptor `/fd/N`, to show that descriptor calls ask ``paths(of:)``.
private final class CallRecorder: ForwardingFileSystem, Sendable {
    let base: any FileSystem
    private let recorded = Locked<[String]>([])

    init(base: any FileSystem) { self.base = base }

    var calls: [String] { recorded.withLock { $0 } }

    func paths(of descriptor: FileDescriptor) -> [FilePath] { [FilePath("/fd/\(descriptor.rawValue)")] }

    func intercept<T>(_ operation: FileSystemOperation, paths: [FilePath], _ call: () throws(Errno) -> T) throws(Errno) -> T {
        recorded.withLock { $0.append(([operation.rawValue] + paths.map(\.string)).joined(separator: " ")) }
        return try call()
    }
}

@Suite("ForwardingFileSystem")
struct ForwardingFileSystemTests {
    @Test("every call but the read-ahead hint goes through the interception point once, naming its paths, and reaches the base")
    func everyCallIsIntercepted() throws {
        let base = SimulatedFileSystem(directories: ["/d"])
        let fs = CallRecorder(base: base)
        try fs.createDirectory("/d/e")
        try fs.synchronizeDirectory("/d")
        let file = try fs.openFile("/d/f", mode: .createNew)
        #expect(try [UInt8]([1, 2, 3]).withUnsafeBytes { try fs.write(file, $0, at: 0) } == 3)
        var buffer = [UInt8](repeating: 0, count: 3)
        #expect(try buffer.withUnsafeMutableBytes { try fs.read(file, into: $0, at: 0) } == 3)
        #expect(buffer == [1, 2, 3])
        #expect(try fs.size(of: file) == 3)
        try fs.truncate(file, to: 2)
        try fs.synchronize(file)
        try fs.lockExclusively(file)
        fs.adviseWillRead(file, offset: 0, length: 2)
        try fs.close(file)
        try fs.rename("/d/f", to: "/d/g")
        #expect(try fs.contentsOfDirectory("/d") == ["e", "g"])
        #expect(try fs.itemKind(at: "/d/g") == .file)
        try fs.removeFile("/d/g")
        try fs.removeDirectory("/d/e")
        let lock = try fs.openAndLock("/d/lock")
        try fs.close(lock)

        let f = "/fd/\(file.rawValue)"
        let l = "/fd/\(lock.rawValue)"
        #expect(
            fs.calls == [
                "createDirectory /d/e", "synchronizeDirectory /d", "openFile /d/f", "write \(f)", "read \(f)",
                "size \(f)", "truncate \(f)", "synchronize \(f)", "lockExclusively \(f)", "close \(f)",
                "rename /d/f /d/g", "contentsOfDirectory /d", "itemKind /d/g", "removeFile /d/g",
                "removeDirectory /d/e",
                // openAndLock: FileSystem's default, through this wrapper's open and lock
                "openFile /d/lock", "lockExclusively \(l)", "close \(l)",
            ])
        #expect(Set(fs.calls.map { String($0.prefix { $0 != " " }) }) == Set(FileSystemOperation.allCases.map(\.rawValue)))
        #expect(try base.contentsOfDirectory("/d") == ["lock"])
    }
}
