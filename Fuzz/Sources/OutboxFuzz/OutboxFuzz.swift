import Crypto
import Foundation
import OutboxFuzzTargets
import OutboxLog

#if OUTBOX_LIBFUZZER
import CLibFuzzer
#endif

/// The fuzz driver (Fuzz/README.md).
///
/// ```
/// OutboxFuzz --list                      the targets
/// OutboxFuzz --seed <corpus> [target...] writes each target's (or the named
///                                        targets') seeds to <corpus>/<target>/
/// OutboxFuzz <target> <file|dir>...      runs inputs once (any build): exit 1 on a finding
/// OutboxFuzz <target> [libFuzzer flags] <dir>...   fuzzes (a build with -DOUTBOX_LIBFUZZER
///                                        and libFuzzer linked: Scripts/sanitize.sh)
/// ```
@main
struct OutboxFuzz {
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        // libFuzzer runs this binary again without the target's name (to
        // minimize a crash, say): it is in the environment then.
        if let name = ProcessInfo.processInfo.environment["OUTBOX_FUZZ_TARGET"], arguments.first?.hasPrefix("-") ?? true,
            arguments.first != "--list", arguments.first != "--seed"
        {
            arguments.insert(name, at: 0)
        }
        switch arguments.first {
        case "--list":
            for target in FuzzTarget.all { print("\(target.name): \(target.summary)") }
        case "--seed":
            guard arguments.count >= 2 else { usage() }
            var targets: [FuzzTarget] = []
            for name in arguments.dropFirst(2) {
                guard let target = FuzzTarget.named(name) else { unknown(name) }
                targets.append(target)
            }
            await seed(targets.isEmpty ? FuzzTarget.all : targets, into: URL(fileURLWithPath: arguments[1]))
        case let name?:
            guard let target = FuzzTarget.named(name) else { unknown(name) }
            arguments.removeFirst()
            #if OUTBOX_LIBFUZZER
            exit(fuzz(target, arguments))
            #else
            exit(replay(target, arguments))
            #endif
        case nil:
            usage()
        }
    }

    static func usage() -> Never {
        FileHandle.standardError.write(Data("usage: OutboxFuzz --list | --seed <corpus> [target...] | <target> <input|dir>...\n".utf8))
        exit(64)
    }

    static func unknown(_ name: String) -> Never {
        FileHandle.standardError.write(Data("unknown target \(name); OutboxFuzz --list names them\n".utf8))
        exit(64)
    }

    /// Runs each input once; prints what a target found.
    static func replay(_ target: FuzzTarget, _ paths: [String]) -> Int32 {
        var findings = 0
        var count = 0
        for file in paths.flatMap(inputFiles) {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            count += 1
            do throws(FuzzViolation) {
                try Array(data).withFuzzBytes { (raw) throws(FuzzViolation) in try target.run(raw) }
            } catch {
                findings += 1
                print("\(target.name): \(file): \(error)")
            }
        }
        print("\(target.name): \(count) input(s), \(findings) finding(s)")
        return findings == 0 ? 0 : 1
    }

    static func inputFiles(_ path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.sorted().map { path + "/" + $0 }.filter { !$0.hasSuffix("/README.md") }
    }

    /// Writes the targets' seeds, named by their SHA-1 as libFuzzer names
    /// corpus files, replacing the seeds written before.
    static func seed(_ targets: [FuzzTarget], into corpus: URL) async {
        for target in targets {
            let folder = corpus.appendingPathComponent(target.name)
            do {
                try? FileManager.default.removeItem(at: folder)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                let seeds = try await target.seeds()
                for seed in seeds {
                    let name = Insecure.SHA1.hash(data: seed).map { String(format: "%02x", $0) }.joined()
                    try Data(seed).write(to: folder.appendingPathComponent(name))
                }
                print("\(target.name): \(seeds.count) seed(s) in \(folder.path)")
            } catch {
                FileHandle.standardError.write(Data("\(target.name): cannot write seeds: \(error)\n".utf8))
                exit(1)
            }
        }
    }
}

#if OUTBOX_LIBFUZZER
/// The target libFuzzer's callback runs (set once, before fuzzing starts).
nonisolated(unsafe) var fuzzTarget: FuzzTarget?

extension OutboxFuzz {
    /// Hands the rest of the command line to libFuzzer, with the target's
    /// `-max_len` unless one is given. A finding aborts with its
    /// description; libFuzzer then saves the input as `crash-…`.
    static func fuzz(_ target: FuzzTarget, _ flags: [String]) -> Int32 {
        fuzzTarget = target
        setenv("OUTBOX_FUZZ_TARGET", target.name, 1)
        var arguments = [CommandLine.arguments[0]] + flags
        if !flags.contains(where: { $0.hasPrefix("-max_len=") }) { arguments.insert("-max_len=\(target.maximumLength)", at: 1) }
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = .allocate(capacity: arguments.count + 1)
        for (index, argument) in arguments.enumerated() { argv![index] = strdup(argument) }
        argv![arguments.count] = nil
        var argc = Int32(arguments.count)
        return LLVMFuzzerRunDriver(&argc, &argv) { data, count in
            do throws(FuzzViolation) {
                try fuzzTarget!.run(UnsafeRawBufferPointer(start: data, count: count))
            } catch {
                fatalError("\(fuzzTarget!.name): \(error)")
            }
            return 0
        }
    }
}
#endif
