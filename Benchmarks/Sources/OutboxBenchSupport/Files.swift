import Foundation
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory under the system's temporary directory (`/tmp`), removed by
/// ``remove()`` (and by its deinit, as a safety net).
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String
    private var removed = false

    public init(prefix: String = "outbox-bench") throws {
        let base = ProcessInfo.processInfo.environment["OUTBOX_BENCH_TMPDIR"] ?? "/tmp"
        var template = Array("\(base)/\(prefix).XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else { throw BenchError("mkdtemp failed in \(base): errno \(errno)") }
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var filePath: FilePath { FilePath(path) }

    public func appending(_ component: String) -> String { path + "/" + component }

    public func remove() {
        guard !removed else { return }
        removed = true
        try? FileManager.default.removeItem(atPath: path)
    }

    deinit { remove() }
}

public struct BenchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The whole file at `path` as UTF-8 text.
public func readTextFile(_ path: String) throws -> String {
    try String(contentsOfFile: path, encoding: .utf8)
}

/// Every regular file under `path`, recursively.
public func regularFiles(under path: String) -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: path) else { return [] }
    var files: [String] = []
    while let relative = enumerator.nextObject() as? String {
        let full = path + "/" + relative
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue {
            files.append(full)
        }
    }
    return files
}

/// Bytes in the regular files under `path`.
public func directoryBytes(_ path: String) -> Int64 {
    regularFiles(under: path).reduce(0) { total, file in
        let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.int64Value ?? 0
        return total + size
    }
}

/// Asks the kernel to drop the cached pages of every file under `path`
/// (`posix_fadvise(DONTNEED)`), so the next read comes from the disk. The
/// files must be clean (synced) for the pages to go. Returns how many files
/// were advised.
@discardableResult
public func evictFromPageCache(_ path: String) -> Int {
    var advised = 0
    for file in regularFiles(under: path) {
        let descriptor = open(file, O_RDONLY)
        guard descriptor >= 0 else { continue }
        #if os(Linux)
        _ = fdatasync(descriptor)
        if posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED) == 0 { advised += 1 }
        #endif
        close(descriptor)
    }
    return advised
}

/// The first line of a command's output, or `nil` if it cannot run.
public func commandOutput(_ executable: String, _ arguments: [String]) -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    do { try process.run() } catch { return nil }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Finds `name` on `PATH`.
public func which(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":") {
        let candidate = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}
