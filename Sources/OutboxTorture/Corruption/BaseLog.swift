import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// A real log, made by running workloads on a real directory, kept in
/// memory so each corruption case starts from an identical copy; with
/// every payload ever written to each key, to check what a damaged log
/// hands back.
struct BaseLog: Sendable {
    /// File name → bytes (segments, and whatever else the directory held).
    var files: [String: [UInt8]]
    /// Every value and annotation any step wrote, by key.
    var values: [LogKey: Set<[UInt8]>] = [:]
    var annotations: [LogKey: Set<[UInt8]>] = [:]
    /// The state a clean open must find in the undamaged copy.
    var state: StateModel
    /// Copied while the log was open (like the disk after `kill -9`),
    /// rather than after a clean close.
    var crashImage: Bool

    static func make(seed: UInt64, number: Int, directory: String) async throws -> BaseLog {
        var random = SplitMix64.derived(seed: seed, stream: 0x4241_5345_0000_0000 | UInt64(number))
        try await Blocking.freshDirectory(directory)
        var values: [LogKey: Set<[UInt8]>] = [:]
        var annotations: [LogKey: Set<[UInt8]>] = [:]
        var state = StateModel()
        let sessions = 1 + random.next(below: 3)
        let crashImage = random.nextBool()
        var files: [String: [UInt8]] = [:]
        for session in 0..<sessions {
            let log = try await OutboxLog.open(at: FilePath(directory), configuration: TortureLogConfiguration.make())
            let operations = TortureWorkload(
                seed: seed, stream: 0x4241_5345_0000 | UInt64(number) << 4 | UInt64(session),
                count: 60 + random.next(below: 240)
            ).operations()
            for operation in operations {
                for write in operation.writes(isLive: state.isLive) ?? [] {
                    switch write.kind {
                    case .value: values[write.key, default: []].insert(write.payload)
                    case .annotation: annotations[write.key, default: []].insert(write.payload)
                    case .tombstone: break
                    }
                }
                state.apply(operation)
                try await OperationRunner.run(operation, on: log)
            }
            if session == sessions - 1 && crashImage {
                // What `kill -9` would leave: everything written, no closing marker.
                try await log.flush()
                await log.waitForBackgroundCompaction()
                files = try await read(directory)
                try await log.close()
            } else {
                try await log.close()
            }
        }
        if !crashImage { files = try await read(directory) }
        await Blocking.remove(directory)
        return BaseLog(
            files: files, values: values, annotations: annotations, state: state, crashImage: crashImage)
    }

    /// Every regular file in `directory`.
    static func read(_ directory: String) async throws -> [String: [UInt8]] {
        try await Blocking.run {
            var files: [String: [UInt8]] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
                var isDirectory: ObjCBool = false
                let path = directory + "/" + name
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue
                else { continue }
                files[name] = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            }
            return files
        }
    }

    /// Writes `files` into a fresh `directory`.
    static func write(_ files: [String: [UInt8]], to directory: String) async throws {
        try await Blocking.run {
            try? FileManager.default.removeItem(atPath: directory)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for (name, bytes) in files {
                try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
            }
        }
    }

    /// What is wrong with `state` as read from a damaged copy: a key no step
    /// wrote, or a value or annotation whose bytes no step wrote.
    func invented(in state: StateModel) -> String? {
        for (key, entry) in state.entries.sorted(by: { $0.key < $1.key }) {
            guard values[key]?.contains(entry.value) == true else {
                return "key \(key) holds a value no step wrote (\(TortureValue.label(entry.value)))"
            }
            if let annotation = entry.annotation, annotations[key]?.contains(annotation) != true {
                return "key \(key) holds an annotation no step wrote (\(TortureValue.label(annotation)))"
            }
        }
        return nil
    }
}
