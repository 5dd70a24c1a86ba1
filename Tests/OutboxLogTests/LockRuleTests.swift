import Foundation
import Testing

/// The package's one lock type is `Locked<Value>` (OutboxLocking).
///
/// Found by ThreadSanitizer (Scripts/sanitize.sh): `Synchronization.Mutex`
/// hands its lock over through a futex call TSan does not see on Linux, so
/// every contended `withLock` was reported as a data race (333 reports in
/// one run) and TSan could not check anything; `Mutex` and `Atomic` also
/// need iOS 18. The sanitizer step would show a new use as races again;
/// this test says why in every plain `swift test`.
@Suite("Lock rule")
struct LockRuleTests {
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// `import Synchronization`, with attributes, an access level or a kind
    /// (`import struct Synchronization.Mutex`).
    static let importPattern =
        #"^\s*(@\S+\s+)*((public|package|internal|fileprivate|private)\s+)?import\s+((struct|class|enum|protocol|typealias|func|let|var)\s+)?Synchronization\b"#

    @Test("no source file imports Synchronization (Mutex, Atomic): locks go through Locked<Value>")
    func noSynchronizationImport() throws {
        let importsSynchronization = try NSRegularExpression(pattern: Self.importPattern)
        let files = try #require(FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil))
        var checked = 0
        for case let file as URL in files where file.pathExtension == "swift" {
            checked += 1
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") {
                let code = String(line)
                if importsSynchronization.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil {
                    Issue.record("\(file.path): \(code) — use Locked<Value> from OutboxLocking (TSan sees it; iOS 16)")
                }
            }
        }
        #expect(checked > 50, "found only \(checked) Swift files under \(Self.sources.path)")
    }
}
