import SystemPackage

/// A declarative fault: "make the Nth call of `operation` on paths matching
/// `paths` fail with errno E (or write only part of its bytes), once / a
/// few times / from then on".
///
/// Rules are installed in a ``FaultInjector`` (shared by
/// ``SimulatedFileSystem`` and ``FaultInjectingFileSystem``). A rule counts
/// only the calls it matches, starting from when it was installed: with
/// `trigger: .call(3)` it fires on the third matching call after
/// ``FaultInjector/install(_:)``. To aim at "the Nth write of a workload", run
/// the workload once without faults, read
/// ``FaultInjector/callCount(of:paths:)``, then rerun it on a fresh file
/// system with the rule installed up front, for each N.
///
/// What an injected fault does mirrors the real system call (see
/// ``Effect``); in particular:
/// - a failed `synchronize` on ``SimulatedFileSystem`` makes the file's
///   unsynced writes un-durable for good although reads still return them
///   (Linux's behaviour, "fsyncgate"); on ``FaultInjectingFileSystem`` the
///   underlying flush is simply not performed;
/// - a failed `close` closes the descriptor anyway (as close(2) does on
///   Linux);
/// - every other failed operation has no effect at all.
public struct FaultRule: Sendable, CustomStringConvertible {
    /// Which matching calls fail.
    public enum Trigger: Sendable, Hashable {
        /// The Nth matching call (1-based) after installation, and, if
        /// ``Repetition`` allows more than one failure, the calls after it.
        case call(Int)
        /// Each matching call independently, with this probability, drawn
        /// from the injector's seeded generator (deterministic for a given
        /// seed and call sequence).
        case randomly(probability: Double)
    }

    /// What happens to a call the rule fires on.
    public enum Effect: Sendable, Hashable {
        /// The call throws this errno without doing anything (except for
        /// `synchronize` and `close`, see above).
        case fail(Errno)
        /// For `write`: a random prefix of the bytes (possibly empty, never
        /// all of them) is written, then the call throws this errno — a disk
        /// filling up mid-write. Other operations: as ``fail(_:)``.
        case failAfterPartialWrite(Errno)
        /// For `write`: a random non-empty proper prefix of the bytes is
        /// written and its length returned, without error — a short write,
        /// which POSIX allows and callers must loop over. A one-byte write
        /// cannot be shortened and proceeds normally. Other operations:
        /// no effect.
        case shortWrite

        /// The errno thrown, or `nil` for ``shortWrite``.
        public var error: Errno? {
            switch self {
            case .fail(let error), .failAfterPartialWrite(let error): error
            case .shortWrite: nil
            }
        }
    }

    /// How many times the rule fires before it goes dormant.
    public enum Repetition: Sendable, Hashable {
        /// A single failure; later calls succeed (a transient error).
        case once
        /// At most this many failures.
        case times(Int)
        /// Every triggered call fails until the rule is removed (a dead disk).
        case always
    }

    /// The operation to fail.
    public var operation: FileSystemOperation
    /// When the rule fires.
    public var trigger: Trigger
    /// How many times it fires.
    public var repetition: Repetition
    /// Which paths it applies to.
    public var paths: PathFilter
    /// What the call does instead of succeeding.
    public var effect: Effect

    /// Creates a rule; see the type's documentation for the meaning of each
    /// part.
    public init(
        failing operation: FileSystemOperation,
        trigger: Trigger = .call(1),
        repetition: Repetition = .once,
        paths: PathFilter = .any,
        effect: Effect = .fail(.ioError)
    ) {
        self.operation = operation
        self.trigger = trigger
        self.repetition = repetition
        self.paths = paths
        self.effect = effect
    }

    /// Fail the `n`th matching call of `operation` once.
    public static func nthCall(
        _ n: Int, of operation: FileSystemOperation, paths: PathFilter = .any, error: Errno = .ioError
    ) -> FaultRule {
        FaultRule(failing: operation, trigger: .call(n), repetition: .once, paths: paths, effect: .fail(error))
    }

    /// Fail the `n`th matching call of `operation` and every one after it.
    public static func fromNthCall(
        _ n: Int, of operation: FileSystemOperation, paths: PathFilter = .any, error: Errno = .ioError
    ) -> FaultRule {
        FaultRule(failing: operation, trigger: .call(n), repetition: .always, paths: paths, effect: .fail(error))
    }

    /// The `n`th matching write (and, if `persistent`, every later one) fails
    /// with `ENOSPC` after writing a random prefix of its bytes.
    public static func diskFull(
        atWrite n: Int, paths: PathFilter = .any, persistent: Bool = true
    ) -> FaultRule {
        FaultRule(
            failing: .write, trigger: .call(n), repetition: persistent ? .always : .once, paths: paths,
            effect: .failAfterPartialWrite(.noSpace))
    }

    /// The `n`th matching write (and every later one, if `persistent`)
    /// writes only part of its bytes and returns the shorter count.
    public static func shortWrites(
        fromWrite n: Int = 1, paths: PathFilter = .any, persistent: Bool = true
    ) -> FaultRule {
        FaultRule(
            failing: .write, trigger: .call(n), repetition: persistent ? .always : .once, paths: paths,
            effect: .shortWrite)
    }

    public var description: String {
        let when: String
        switch trigger {
        case .call(let n): when = "call #\(n)"
        case .randomly(let p): when = "calls with probability \(p)"
        }
        let howOften: String
        switch repetition {
        case .once: howOften = "once"
        case .times(let n): howOften = "\(n) times"
        case .always: howOften = "from then on"
        }
        let what: String
        switch effect {
        case .fail(let error): what = "fail with \(error)"
        case .failAfterPartialWrite(let error): what = "write a random prefix, then fail with \(error)"
        case .shortWrite: what = "write a random prefix and return its length"
        }
        return "\(operation) \(when) on \(paths): \(what), \(howOften)"
    }
}
