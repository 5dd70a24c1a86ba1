import CLITestSupport
import Foundation
import IdempotencyKeyMiddleware
import Logging
import Outbox
import OutboxLog
import OutboxQueue
import SystemPackage
import Testing

/// The stores' test vectors (Tests/StoreVectors, see its README.md): the
/// outbox store's, the key store's and the durable queue's own decoders must read every vector
/// as its expected.json says, and the generator must still write exactly
/// these bytes, so a change to Docs/STORE-FORMAT.md's records, to an
/// encoder or to a decoder cannot go unnoticed.
@Suite("Store format test vectors")
struct StoreVectorTests {
    static let vectors = VectorFolder(
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("StoreVectors"),
        filesFolder: "files")
    static let folder = vectors.url
    static let names = vectors.names

    @Test("the folder holds the queue and key store vectors")
    func vectorsArePresent() {
        #expect(Self.names == ["durable-queue", "key-store", "queue-checkpoint", "queue-records"], "found \(Self.names) in \(Self.folder.path)")
    }

    @Test("the stores' decoders read each vector as expected.json says", arguments: names)
    func decodersReadVector(_ name: String) async throws {
        let data = try Data(contentsOf: Self.folder.appendingPathComponent("\(name)/expected.json"))
        var expected = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        expected["summary"] = nil
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = Self.folder.appendingPathComponent("\(name)/files").path
        for file in try FileManager.default.contentsOfDirectory(atPath: source) {
            try FileManager.default.copyItem(atPath: source + "/" + file, toPath: scratch.path + "/" + file)
        }
        var configuration = OutboxLog.Configuration()
        configuration.logger = .init(label: "store-vectors", factory: { _ in SwiftLogNoOpLogHandler() })
        let decoded: [String: Any]
        if FileManager.default.fileExists(atPath: source + "/elements") {
            decoded = try await DurableQueueDescription.directory(FilePath(scratch.path), configuration: configuration)
        } else if FileManager.default.fileExists(atPath: source + "/keys.secret") {
            decoded = try await KeyStoreRecordDescription.directory(FilePath(scratch.path), configuration: configuration)
        } else {
            decoded = try await StoreRecordDescription.directory(FilePath(scratch.path), configuration: configuration)
        }
        for difference in JSONDifference.between(expected, decoded) {
            Issue.record("\(name): \(difference)")
        }
    }

    @Test("outbox log make-store-vectors writes exactly the checked-in vectors")
    func generatorReproducesVectors() async throws {
        try await Self.vectors.expectGeneratorReproduces(["log", "make-store-vectors"], readme: "Tests/StoreVectors/README.md")
    }
}

/// A directory under the system's temporary directory, removed by ``remove()``.
struct Scratch {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.path + "/outbox-store-vectors-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Where two JSON values differ, by path (`entries[3].state.failures`).
enum JSONDifference {
    static func between(_ expected: Any, _ actual: Any, at path: String = "") -> [String] {
        switch (expected, actual) {
        case (let expected as [String: Any], let actual as [String: Any]):
            return Set(expected.keys).union(actual.keys).sorted().flatMap { key -> [String] in
                let here = path.isEmpty ? key : path + "." + key
                guard let left = expected[key] else { return ["\(here): not expected, decoded \(text(actual[key]!))"] }
                guard let right = actual[key] else { return ["\(here): expected \(text(left)), not decoded"] }
                return between(left, right, at: here)
            }
        case (let expected as [Any], let actual as [Any]):
            guard expected.count == actual.count else {
                return ["\(path): expected \(expected.count) items, decoded \(actual.count)"]
            }
            return zip(expected, actual).enumerated().flatMap { between($0.element.0, $0.element.1, at: "\(path)[\($0.offset)]") }
        default:
            let left = text(expected)
            let right = text(actual)
            return left == right ? [] : ["\(path): expected \(left), decoded \(right)"]
        }
    }

    /// A value's canonical JSON text.
    static func text(_ value: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]) else {
            return "\(value)"
        }
        return String(decoding: data, as: UTF8.self)
    }
}
