import CLITestSupport
import Foundation
import OutboxLogTesting
import Testing

/// No number on the command line crashes the tool: every numeric option of
/// every command, given extreme values (and a few seeded random ones), is
/// either accepted (the command exits 0, or is still serving or working
/// when the test stops it, or fails the ordinary way its table entry names)
/// or refused as a usage error (exit 64) — never a trap or another signal. The options come from the tool itself
/// (`--experimental-dump-help`), checked against ``CommandLineOptionTable``.
@Suite("numeric options", .serialized, .timeLimit(.minutes(10)))
struct NumericOptionTests {
    /// The values every numeric option gets.
    static let extremes = [
        "0", "-1", "nan", "inf", "1e300", "-1e300", "9223372036854775807", "18446744073709551616", "99999999999999999999999",
    ]
    /// Random values per option, on top of the extremes.
    static let randomPerOption = 3
    /// How long an accepted value may keep a command running before the
    /// test stops it: a server or a long job that got this far started.
    static let stillRunningAfter: Duration = .seconds(4)
    /// Child processes at once (the machine may have 2 cores).
    static let parallelRuns = 3

    @Test("the table classifies every option of every command the tool has, and nothing else")
    func tableMatchesTheTool() async throws {
        let tool = try await Self.commandsOfTheTool()
        let table = CommandLineOptionTable.commands.mapValues { Set($0.options.keys) }
        for (command, options) in tool.sorted(by: { $0.key < $1.key }) {
            guard let known = table[command] else {
                Issue.record("`outbox \(command)` is not in CommandLineOptionTable: add it with its options \(options.sorted())")
                continue
            }
            #expect(options == known, "`outbox \(command)`: unclassified \(options.subtracting(known).sorted()), gone \(known.subtracting(options).sorted())")
        }
        #expect(Set(table.keys) == Set(tool.keys), "commands in the table but not in the tool: \(Set(table.keys).subtracting(tool.keys).sorted())")
    }

    @Test("extreme and random values of every numeric option exit 0, exit 64 or keep running: never a crash")
    func extremeValues() async throws {
        let seed = ProcessInfo.processInfo.environment["OUTBOX_NUMBERS_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64(Int64.max))
        print("numeric options: seed \(seed) (replay with OUTBOX_NUMBERS_SEED=\(seed))")
        let tool = try await Self.commandsOfTheTool()
        var random = SplitMix64(seed: seed)
        var cases: [Case] = []
        for (name, command) in CommandLineOptionTable.commands.sorted(by: { $0.key < $1.key }) where tool[name] != nil {
            // The clean line itself, then each numeric option with each value.
            if command.options.values.contains(where: \.isNumeric) { cases.append(Case(command: name, option: nil, value: "")) }
            for (option, kind) in command.options.sorted(by: { $0.key < $1.key }) where kind.isNumeric {
                let values = Self.extremes + (0..<Self.randomPerOption).map { _ in Self.randomNumber(kind, &random) }
                cases += values.map { Case(command: name, option: option, value: kind.value($0)) }
            }
        }
        let server = try await ServeProcess(["--in-memory-keys"])
        let outcomes = try await Self.run(cases, serverURL: server.baseURL.absoluteString)
        await server.stop()
        var crashes = 0
        var tally: [String: Int] = [:]
        for (test, outcome) in zip(cases, outcomes) {
            tally[outcome.summary, default: 0] += 1
            switch outcome {
            case .exited(0, _), .stillRunning: continue
            // A usage error refuses the value; the clean line must run.
            case .exited(64, _) where test.option != nil: continue
            case .exited(let status, _) where test.option != nil && test.ordinaryExits.keys.contains(status): continue
            case .exited(let status, let stderr):
                Issue.record("outbox \(test.command) \(test.setting): exit \(status), not 0 or 64 (seed \(seed)): \(stderr.suffix(600))")
            case .crashed(let description):
                crashes += 1
                Issue.record("outbox \(test.command) \(test.setting): \(description) (seed \(seed))")
            }
        }
        print("numeric options: \(cases.count) runs, \(crashes) crashed; " + tally.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))
    }

    /// One run: a command's clean line with one option set (or none).
    struct Case: Sendable {
        var command: String
        var option: String?
        var value: String
        var ordinaryExits: [Int32: String] { CommandLineOptionTable.commands[command]?.ordinaryExits ?? [:] }
        var setting: String { option.map { "\($0)=\(value)" } ?? "(clean line)" }
    }

    enum Outcome: Sendable {
        case exited(Int32, stderr: String)
        case stillRunning
        case crashed(String)

        var summary: String {
            switch self {
            case .exited(let status, _): "exit \(status)"
            case .stillRunning: "still running"
            case .crashed: "crashed"
            }
        }
    }

    /// Runs every case, `parallelRuns` at a time, each in its own scratch
    /// directory; the outcomes in the cases' order.
    static func run(_ cases: [Case], serverURL: String) async throws -> [Outcome] {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-numbers-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        return try await withThrowingTaskGroup(of: (Int, Outcome).self) { group in
            var outcomes = [Outcome?](repeating: nil, count: cases.count)
            var next = 0
            func start() {
                guard next < cases.count else { return }
                let index = next
                next += 1
                let fixture = CommandLineOptionTable.Fixture(scratch: "\(base)/\(index)", serverURL: serverURL)
                group.addTask { (index, try await runOne(cases[index], fixture)) }
            }
            for _ in 0..<parallelRuns { start() }
            while let (index, outcome) = try await group.next() {
                outcomes[index] = outcome
                try? FileManager.default.removeItem(atPath: "\(base)/\(index)")
                start()
            }
            return outcomes.map { $0! }
        }
    }

    static func runOne(_ test: Case, _ fixture: CommandLineOptionTable.Fixture) async throws -> Outcome {
        let command = try #require(CommandLineOptionTable.commands[test.command])
        try FileManager.default.createDirectory(atPath: fixture.scratch, withIntermediateDirectories: true)
        try await command.prepare(fixture)
        let arguments =
            test.option.map { command.line(fixture, setting: $0, to: test.value) }
            ?? command.words(fixture) + command.settings(fixture).map { "\($0.0)=\($0.1)" }
        do {
            let run = try await OutboxTool.run(arguments, currentDirectory: fixture.scratch, stopAfter: stillRunningAfter)
            return run.stopped ? .stillRunning : .exited(run.status, stderr: run.stderr)
        } catch let killed as OutboxTool.KilledBySignal {
            let cause = killed.stderr.split(separator: "\n").first { $0.contains("Fatal error") }.map(String.init)
            return .crashed("killed by signal \(killed.signal): \(cause ?? String(killed.stderr.suffix(600)))")
        }
    }

    /// `outbox --experimental-dump-help`: every command (by its words after
    /// `outbox`) with its options' long names and its positionals as `<name>`.
    static func commandsOfTheTool() async throws -> [String: Set<String>] {
        let run = try await OutboxTool.run(["--experimental-dump-help"])
        try #require(run.status == 0, "\(run.stderr)")
        let dump = try JSONDecoder().decode(ToolDump.self, from: Data(run.stdout.utf8))
        var result: [String: Set<String>] = [:]
        func walk(_ command: ToolDump.Command, path: [String]) {
            var options: Set<String> = []
            for argument in command.arguments ?? [] {
                switch argument.kind {
                case "option": options.insert("--" + (argument.preferredName?.name ?? argument.valueName ?? "?"))
                case "positional": options.insert("<\(argument.valueName ?? "?")>")
                default: continue  // flags take no value
                }
            }
            result[path.joined(separator: " ")] = options
            for sub in command.subcommands ?? [] { walk(sub, path: path + [sub.commandName]) }
        }
        walk(dump.command, path: [])
        return result
    }

    /// The parts of ArgumentParser's `ToolInfoV0` the test reads.
    struct ToolDump: Decodable {
        struct Name: Decodable { var kind: String; var name: String }
        struct Argument: Decodable { var kind: String; var preferredName: Name?; var valueName: String? }
        struct Command: Decodable { var commandName: String; var subcommands: [Command]?; var arguments: [Argument]? }
        var command: Command
    }

    /// A random number of any size and sign, as a command line might carry
    /// it; durations get a random unit.
    static func randomNumber(_ kind: CommandLineOptionTable.Kind, _ random: inout SplitMix64) -> String {
        let sign = random.next(below: 4) == 0 ? "-" : ""
        let digits = 1 + random.next(below: 25)
        var number = sign + (0..<digits).map { _ in String(random.next(below: 10)) }.joined()
        if kind != .integer, random.next(below: 2) == 0 { number += ".\(random.next(below: 1000))" }
        if kind != .integer, random.next(below: 4) == 0 { number += "e\(random.next(below: 40) - 20)" }
        if kind == .duration { number += ["", "ms", "s", "m", "h", "d"][random.next(below: 6)] }
        return number
    }
}
