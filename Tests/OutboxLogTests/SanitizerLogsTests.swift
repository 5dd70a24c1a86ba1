import CLITestSupport
import Foundation
import Testing

/// The plumbing that keeps a child process's sanitizer reports
/// (Scripts/sanitize.sh runs the suite with the sanitizers).
@Suite("Sanitizer logs of child processes")
struct SanitizerLogsTests {
    func scratch() throws -> SanitizerLogs {
        try SanitizerLogs(directory: FileManager.default.temporaryDirectory.appendingPathComponent("outbox-sanitizer-logs-\(UUID().uuidString)"))
    }

    @Test("the child's options keep the inherited ones and send every report to the folder, one file per process")
    func environment() throws {
        let logs = try scratch()
        defer { try? FileManager.default.removeItem(at: logs.directory) }
        let environment = logs.environment
        let inherited = ProcessInfo.processInfo.environment
        for variable in ["ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"] {
            let options = try #require(environment[variable])
            // Sanitizers read options left to right: the folder wins.
            #expect(options.hasSuffix("log_path=\(logs.directory.path)/sanitizer:log_exe_name=1"), "\(variable)=\(options)")
            if let mine = inherited[variable], !mine.isEmpty { #expect(options.hasPrefix(mine + ":")) }
        }
        #expect(environment["PATH"] == inherited["PATH"])
    }

    @Test("a report a child left is returned whole, with its file; an empty folder or file is no report")
    func reports() throws {
        let logs = try scratch()
        defer { try? FileManager.default.removeItem(at: logs.directory) }
        #expect(logs.report() == nil)
        _ = FileManager.default.createFile(atPath: logs.directory.appendingPathComponent("sanitizer.outbox.41").path, contents: Data())
        #expect(logs.report() == nil)
        let text = "==77==ERROR: AddressSanitizer: heap-buffer-overflow\nSUMMARY: AddressSanitizer: heap-buffer-overflow"
        _ = FileManager.default.createFile(atPath: logs.directory.appendingPathComponent("sanitizer.outbox.77").path, contents: Data(text.utf8))
        let report = try #require(logs.report())
        #expect(report.entries.map(\.file) == ["sanitizer.outbox.77"])
        #expect(report.description.contains("sanitizer.outbox.77"))
        #expect(report.description.contains("heap-buffer-overflow"))
    }

    @Test("a long report is cut in the middle, keeping its first stacks and its summary")
    func longReport() throws {
        let logs = try scratch()
        defer { try? FileManager.default.removeItem(at: logs.directory) }
        let text = "WARNING: ThreadSanitizer: data race\n" + String(repeating: "    #9 frame\n", count: 5_000) + "SUMMARY: ThreadSanitizer: data race"
        _ = FileManager.default.createFile(atPath: logs.directory.appendingPathComponent("sanitizer.outbox.5").path, contents: Data(text.utf8))
        let description = try #require(logs.report()).description
        #expect(description.count < 12_500)
        #expect(description.contains("WARNING: ThreadSanitizer: data race"))
        #expect(description.hasSuffix("SUMMARY: ThreadSanitizer: data race"))
    }
}
