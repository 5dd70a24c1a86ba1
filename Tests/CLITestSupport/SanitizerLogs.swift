import Foundation

/// Keeps the sanitizer reports of a child process the tests start.
///
/// A child built with a sanitizer (`swift build --sanitize=…`, as
/// Scripts/sanitize.sh does) inherits its options from the environment and
/// writes its reports to standard error — which tests usually discard, or
/// read and delete. This points every sanitizer's `log_path` at a folder of
/// its own (`log_exe_name=1`: one file per process, named after its
/// executable and pid, grandchildren included), keeping whatever else the
/// options say (suppressions, say); ``report()`` then returns what they
/// wrote, for the test to show in its failure.
public struct SanitizerLogs: Sendable {
    /// The sanitizers whose options carry `log_path`.
    static let optionVariables = ["ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"]

    /// Where the reports go.
    public let directory: URL

    /// Creates `directory` (and its parents).
    public init(directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// The current environment, with every sanitizer's reports sent to
    /// ``directory``: give it to the child.
    public var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        let logPath = "log_path=\(directory.appendingPathComponent("sanitizer").path):log_exe_name=1"
        for variable in Self.optionVariables {
            // A later option overrides an earlier one of the same name.
            environment[variable] = [environment[variable], logPath].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ":")
        }
        return environment
    }

    /// What the child (or its children) reported, or `nil` if nothing.
    public func report() -> SanitizerReport? {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasPrefix("sanitizer.") }
        let reports = names.sorted().compactMap { name -> SanitizerReport.Entry? in
            guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path), !data.isEmpty else {
                return nil
            }
            return SanitizerReport.Entry(file: name, text: String(decoding: data, as: UTF8.self))
        }
        return reports.isEmpty ? nil : SanitizerReport(entries: reports)
    }
}

/// What sanitizers reported in a child process: a failure, whatever the
/// child's exit status.
public struct SanitizerReport: Error, CustomStringConvertible, Sendable {
    public struct Entry: Sendable {
        /// `sanitizer.<executable>.<pid>`
        public var file: String
        public var text: String
    }

    public var entries: [Entry]

    /// Each report, long ones cut in the middle (the first stacks and the
    /// summary are what matter).
    public var description: String {
        let shown = entries.map { entry -> String in
            let text = entry.text.count > 12_000 ? entry.text.prefix(9_000) + "\n[…]\n" + entry.text.suffix(2_000) : Substring(entry.text)
            return "--- \(entry.file)\n\(text)"
        }
        return "a sanitizer reported in a child process:\n" + shown.joined(separator: "\n")
    }
}
