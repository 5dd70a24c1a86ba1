import ArgumentParser
import Foundation
import OutboxLog
import SystemPackage

/// `outbox log make-vectors DIR`: writes the format's test vectors.
struct LogMakeVectors: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "make-vectors",
        abstract: "Write the on-disk format's test vectors (Tests/Vectors) and their expected results.",
        discussion: """
            For each case, DIR/<case>/log/ holds the log's files and DIR/<case>/expected.json what \
            this tool says of them: the exit status and JSON of 'outbox log verify --json', the \
            entries of 'outbox log dump --salvage --json', and whether a strict read-only open \
            succeeds (or the code, file and offset of its error). Existing case folders are \
            replaced. Salts are fixed, so running it again gives the same bytes.
            """
    )

    @Argument(help: "The folder to write the vectors into (Tests/Vectors in the repository).")
    var directory: String

    @Option(help: "Write only the cases whose name contains this text.")
    var only: String?

    func run() async throws {
        let cases = VectorCases.all.filter { only.map($0.name.contains) ?? true }
        for vector in cases {
            let folder = directory + "/" + vector.name
            try? FileManager.default.removeItem(atPath: folder)
            let files = try await vector.files()
            try VectorLogs.store(files, in: folder + "/log")
            let expected = try await Self.expected(for: vector, files: files)
            let json = try JSONSerialization.data(withJSONObject: expected, options: [.prettyPrinted, .sortedKeys])
            try (json + Data("\n".utf8)).write(to: URL(fileURLWithPath: folder + "/expected.json"))
            StandardStreams.writeLine("\(vector.name): verify exit \(expected["verify"].flatMap { ($0 as? [String: Any])?["exitCode"] } ?? "?")")
        }
    }

    /// What this tool says of `files`, read from a scratch copy (an open
    /// creates the `LOCK` file, which has no place in a vector).
    static func expected(for vector: VectorCase, files: VectorFiles) async throws -> [String: Any] {
        let scratch = try VectorLogs.Scratch()
        defer { scratch.remove() }
        try VectorLogs.store(files, in: scratch.path)
        let verify = try await runSelf(["log", "verify", "--json", scratch.path])
        var verifyJSON = try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any] ?? [:]
        // Where the copy was and how long it took are not part of the vector.
        verifyJSON["directory"] = nil
        verifyJSON["durationSeconds"] = nil
        if var error = verifyJSON["error"] as? [String: Any] {
            error["message"] = nil
            error["file"] = (error["file"] as? String).map { FilePath($0).lastComponent?.string ?? $0 } ?? NSNull()
            if error["offset"] == nil { error["offset"] = NSNull() }
            verifyJSON["error"] = error
        }
        var result: [String: Any] = [
            "summary": vector.summary,
            "verify": ["exitCode": verify.status, "json": verifyJSON],
            "strict": try await strictOpen(scratch.path),
        ]
        if verifyJSON["error"] == nil {
            let dump = try await runSelf(["log", "dump", "--salvage", "--json", scratch.path])
            let entries = try dump.stdout.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) }
            result["dump"] = ["exitCode": dump.status, "entries": entries]
        }
        return result
    }

    /// A strict read-only open, as `outbox log dump` does it.
    static func strictOpen(_ path: String) async throws -> [String: Any] {
        var configuration = VectorLogs.configuration()
        configuration.readOnly = true
        configuration.createIfMissing = false
        do {
            let log = try await OutboxLog.open(at: FilePath(path), configuration: configuration)
            try await log.close()
            return ["ok": true]
        } catch {
            return [
                "error": [
                    "code": "\(error.code)", "file": error.file?.lastComponent?.string ?? NSNull(),
                    "offset": error.offset ?? NSNull(),
                ] as [String: Any]
            ]
        }
    }

    /// Runs this executable with `arguments`; its standard output and exit
    /// status. The output goes to a file, so waiting blocks no thread.
    static func runSelf(_ arguments: [String]) async throws -> (status: Int32, stdout: String) {
        let outputPath = FileManager.default.temporaryDirectory.path + "/outbox-vectors-output-" + UUID().uuidString
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        defer { try? output.close() }
        let process = Process()
        process.executableURL = Bundle.main.executableURL
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let status = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        let stdout = FileManager.default.contents(atPath: outputPath) ?? Data()
        return (status, String(decoding: stdout, as: UTF8.self))
    }
}
