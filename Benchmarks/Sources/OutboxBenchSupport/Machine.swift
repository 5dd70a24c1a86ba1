import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the numbers were measured on.
public struct MachineDescription: Codable, Sendable {
    public var processors: Int
    public var memoryBytes: UInt64
    public var kernel: String
    public var swift: String
    public var dataDirectory: String
    /// `df -hT` of the data directory.
    public var disk: String
    /// The mount line of the data directory's file system.
    public var mount: String
    public var cpu: String
    public var loadAverage: String
    public var date: String

    public static func current(dataDirectory: String) -> MachineDescription {
        var name = utsname()
        uname(&name)
        func field<T>(_ value: T) -> String {
            withUnsafeBytes(of: value) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
        }
        let kernel = "\(field(name.sysname)) \(field(name.release)) \(field(name.machine))"
        let swift =
            which("swift").flatMap { commandOutput($0, ["--version"]) }?
            .split(separator: "\n").first.map(String.init) ?? "unknown"
        let disk = which("df").flatMap { commandOutput($0, ["-hT", dataDirectory]) } ?? "unknown"
        var mount = "unknown"
        if let device = disk.split(separator: "\n").dropFirst().first?.split(separator: " ").first,
            let mounts = try? readTextFile("/proc/mounts")
        {
            let mountPoint = disk.split(separator: "\n").dropFirst().first?.split(separator: " ").last.map(String.init)
            mount =
                mounts.split(separator: "\n").first {
                    let parts = $0.split(separator: " ")
                    return parts.count > 1 && parts[0] == device && (mountPoint == nil || String(parts[1]) == mountPoint)
                }.map(String.init) ?? "unknown"
        }
        var cpu = "unknown"
        if let info = try? readTextFile("/proc/cpuinfo"),
            let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") })
        {
            cpu = line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? cpu
        }
        let load = (try? readTextFile("/proc/loadavg"))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "unknown"
        let formatter = ISO8601DateFormatter()
        return MachineDescription(
            processors: ProcessInfo.processInfo.activeProcessorCount,
            memoryBytes: ProcessInfo.processInfo.physicalMemory, kernel: kernel, swift: swift,
            dataDirectory: dataDirectory, disk: disk, mount: mount, cpu: cpu, loadAverage: load,
            date: formatter.string(from: Date()))
    }

    /// The 1-minute load average now.
    public static func loadAverageNow() -> String {
        (try? readTextFile("/proc/loadavg"))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "unknown"
    }
}
