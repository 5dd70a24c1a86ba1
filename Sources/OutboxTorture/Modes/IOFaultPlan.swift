import OutboxLogTesting
import SystemPackage

/// The fault one I/O-fault cycle injects, drawn from the seed and cycle.
struct IOFaultPlan: Sendable, CustomStringConvertible {
    /// Which system call fails.
    enum Target: String, Sendable, CaseIterable {
        case write, synchronize, rename, synchronizeDirectory, create, truncate, removeFile, read

        var operation: FileSystemOperation {
            switch self {
            case .write: .write
            case .synchronize: .synchronize
            case .rename: .rename
            case .synchronizeDirectory: .synchronizeDirectory
            case .create: .openFile
            case .truncate: .truncate
            case .removeFile: .removeFile
            case .read: .read
            }
        }

        /// `create` fails only opens that create a file (a new segment, a
        /// compaction output, an intent), not every open.
        var paths: PathFilter {
            self == .create
                ? .matching("created files") { $0.string.hasSuffix(".tmp") || $0.string.hasSuffix(".compacting") }
                : .any
        }
    }

    var target: Target
    var errno: Errno
    /// Which matching call fails first (1-based).
    var call: Int
    /// Whether every later matching call fails too (a dead disk) or only that one.
    var persistent: Bool
    /// For writes: part of the bytes land before the error (a disk filling up).
    var partial: Bool

    /// Faults for the workload: the append path and compaction.
    /// With preallocated segments, writes include the zero-fills ahead of
    /// the records (ENOSPC there is the case to cover) and truncates the
    /// cut of the zeros before a segment is sealed.
    static func drawForWorkload(_ random: inout SplitMix64, preallocated: Bool = false) -> IOFaultPlan {
        let targets: [Target] =
            [.write, .write, .synchronize, .synchronize, .rename, .synchronizeDirectory, .create, .removeFile]
            + (preallocated ? [.write, .truncate] : [])
        return draw(targets[random.next(below: targets.count)], callLimit: 40, &random)
    }

    /// Faults for a recovery: what an open after a crash does.
    static func drawForRecovery(_ random: inout SplitMix64) -> IOFaultPlan {
        let targets: [Target] = [.truncate, .synchronize, .synchronizeDirectory, .rename, .removeFile, .write, .create, .read]
        return draw(targets[random.next(below: targets.count)], callLimit: 4, &random)
    }

    private static func draw(_ target: Target, callLimit: Int, _ random: inout SplitMix64) -> IOFaultPlan {
        IOFaultPlan(
            target: target, errno: random.nextBool() ? .ioError : .noSpace, call: 1 + random.next(below: callLimit),
            persistent: random.nextBool(), partial: target == .write && random.nextBool())
    }

    var rule: FaultRule {
        FaultRule(
            failing: target.operation, trigger: .call(call), repetition: persistent ? .always : .once,
            paths: target.paths, effect: partial ? .failAfterPartialWrite(errno) : .fail(errno))
    }

    var description: String {
        "\(target) #\(call) fails with \(errno)\(partial ? " after a partial write" : "")\(persistent ? " from then on" : " once")"
    }
}
