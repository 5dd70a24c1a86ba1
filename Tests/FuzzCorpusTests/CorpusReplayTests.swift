import Foundation
import OutboxFuzzTargets
import OutboxLog
import Testing

/// Every fuzz target runs its checked-in corpus (Fuzz/corpus: seeds and
/// what fuzzing added) and its regressions (Fuzz/regressions: inputs that
/// once found something) in every plain `swift test`, so what fuzzing found
/// once stays fixed even where the fuzzers do not run.
@Suite("Fuzz corpus")
struct CorpusReplayTests {
    static let fuzzFolder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static func inputs(_ folder: String, _ target: String) -> [URL] {
        let directory = fuzzFolder.appendingPathComponent(folder).appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0 != "README.md" }.sorted().map { directory.appendingPathComponent($0) }
    }

    @Test("the corpus and the regressions pass their target", arguments: FuzzTarget.all.map(\.name))
    func replay(_ name: String) async throws {
        let target = try #require(FuzzTarget.named(name))
        let corpus = Self.inputs("corpus", name)
        #expect(!corpus.isEmpty, "no corpus in Fuzz/corpus/\(name): regenerate it (Fuzz/README.md)")
        for file in corpus + Self.inputs("regressions", name) {
            let bytes = try [UInt8](Data(contentsOf: file))
            do throws(FuzzViolation) {
                try await target.check(bytes)
            } catch {
                Issue.record("\(file.lastPathComponent): \(error)")
            }
        }
    }

    @Test("freshly generated seeds pass their target", arguments: FuzzTarget.all.map(\.name))
    func seeds(_ name: String) async throws {
        let target = try #require(FuzzTarget.named(name))
        let seeds = try await target.seeds()
        #expect(!seeds.isEmpty)
        for (index, seed) in seeds.enumerated() {
            do throws(FuzzViolation) {
                try await target.check(seed)
            } catch {
                Issue.record("seed \(index): \(error)")
            }
        }
    }
}
