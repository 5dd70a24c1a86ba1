import Foundation
import OutboxLogTesting
import SystemPackage

/// Copies a simulated disk (as reads see it) into a real directory, so the
/// log of a failing cycle can be inspected with `outbox log verify/dump`.
enum DiskImage {
    /// Writes every file of `disk` under `directory`, keeping their paths;
    /// returns the directory.
    @discardableResult
    static func save(_ disk: SimulatedFileSystem, to directory: FilePath) async -> FilePath {
        let files = disk.allFiles().compactMap { path in disk.contents(of: path).map { (path, $0) } }
        _ = try? await Blocking.run {
            try? FileManager.default.removeItem(atPath: directory.string)
            for (path, bytes) in files {
                var target = directory
                for component in path.components { target.append(component) }
                try FileManager.default.createDirectory(
                    atPath: target.removingLastComponent().string, withIntermediateDirectories: true)
                try Data(bytes).write(to: URL(fileURLWithPath: target.string))
            }
        }
        return directory
    }
}
