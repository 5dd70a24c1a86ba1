import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A running `outbox serve`, started from the release build, ended with SIGTERM.
final class ServeProcess {
    let process = Process()
    /// From the "listening on" line.
    private(set) var port = 0
    /// Seconds from spawn to the "listening on" line.
    private(set) var startSeconds = 0.0

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// Starts `outbox serve --port 0 arguments…`, optionally under `ulimit -n descriptorLimit`.
    init(outbox: String, arguments: [String], descriptorLimit: Int? = nil) throws {
        let pipe = Pipe()
        if let descriptorLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", outbox, "serve", "--port", "0"] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: outbox)
            process.arguments = ["serve", "--port", "0"] + arguments
        }
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let started = Date()
        try process.run()
        var text = ""
        while !text.contains("\n") {
            let data = pipe.fileHandleForReading.availableData
            if data.isEmpty { throw Failure(description: "outbox serve ended without listening: \(text)") }
            text += String(decoding: data, as: UTF8.self)
        }
        startSeconds = Date().timeIntervalSince(started)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }),
            let url = line.split(separator: " ").dropFirst(2).first, let port = URL(string: String(url))?.port
        else { throw Failure(description: "no listening line in \(text)") }
        self.port = port
    }

    var pid: Int32 { process.processIdentifier }

    /// Resident memory (VmRSS) in bytes.
    var residentBytes: Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return 0 }
        return kilobytes * 1024
    }

    /// User + system CPU seconds the process used so far.
    var cpuSeconds: Double {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        // Fields after the command name, which is in parentheses.
        guard let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

/// Idle TCP connections to a loopback port (for the descriptor-limit scenario).
func openIdleConnections(_ count: Int, port: Int) -> [Int32] {
    (0..<count).compactMap { _ in
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if result != 0 {
            close(fd)
            return nil
        }
        return fd
    }
}
