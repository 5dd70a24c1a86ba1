import Foundation
import Testing

/// A checked-in folder of test vectors (Tests/Vectors, Tests/StoreVectors):
/// one subfolder per vector, each with an `expected.json` beside the files
/// that the tool's generator writes.
public struct VectorFolder: Sendable {
    public let url: URL
    /// The subfolder that holds a vector's generated files (`log`, `files`).
    public let filesFolder: String

    public init(_ url: URL, filesFolder: String) {
        self.url = url
        self.filesFolder = filesFolder
    }

    /// The vectors' names (the subfolders with an `expected.json`), sorted.
    public var names: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [])
            .filter { FileManager.default.fileExists(atPath: url.appendingPathComponent("\($0)/expected.json").path) }
            .sorted()
    }

    /// Runs `outbox arguments… OUTPUT` and records an issue for each
    /// checked-in file it does not write again byte for byte (`readme` says
    /// how to regenerate them when the change is meant).
    public func expectGeneratorReproduces(
        _ arguments: [String], readme: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-vectors-again-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: output) }
        let run = try await OutboxTool.run(arguments + [output.path])
        #expect(run.status == 0, "\(run.stderr)", sourceLocation: sourceLocation)
        let generated = try Self.listing(output)
        let checkedIn = try Self.listing(url).filter { $0.key.hasSuffix("/expected.json") || $0.key.contains("/\(filesFolder)/") }
        #expect(Set(generated.keys) == Set(checkedIn.keys), sourceLocation: sourceLocation)
        let command = (["outbox"] + arguments).joined(separator: " ")
        for (path, bytes) in checkedIn.sorted(by: { $0.key < $1.key }) where generated[path] != bytes {
            Issue.record("\(path) differs from what \(command) writes now: regenerate (\(readme)) if the change is meant", sourceLocation: sourceLocation)
        }
    }

    /// Every file under `root`, by relative path.
    static func listing(_ root: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let full = root.appendingPathComponent(path).path
            if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue {
                files[path] = try Data(contentsOf: URL(fileURLWithPath: full))
            }
        }
        return files
    }
}
