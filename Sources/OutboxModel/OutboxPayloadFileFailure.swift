import SystemPackage

/// What is wrong with an entry's payload file: which file, where, and why.
/// Carried by ``OutboxError/payloadFile`` with the code
/// ``OutboxError/Code/damagedPayload``.
public struct OutboxPayloadFileFailure: Sendable, Hashable, CustomStringConvertible {
    /// Why the file cannot give the entry's body back.
    public enum Reason: Sendable, Hashable {
        /// No file by that name: deleted, or lost with its directory.
        case missing
        /// The file does not have the size its entry recorded (cut short,
        /// or grown): `found` bytes where `expected` were written.
        case wrongSize(expected: Int64, found: Int64)
        /// A sealed chunk fails authentication: damaged, or not the chunk
        /// sealed for this entry at this place (moved, swapped, replayed).
        case chunkFailsAuthentication(chunk: Int)
        /// The bytes read do not hash to the SHA-256 the entry recorded.
        case digestMismatch
        /// Reading the file failed.
        case unreadable(Errno)
    }

    /// The file.
    public var file: FilePath
    /// Where in the file the problem was found, when that is known.
    public var offset: Int64?
    public var reason: Reason

    public init(file: FilePath, offset: Int64?, reason: Reason) {
        self.file = file
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        let at = offset.map { " at offset \($0)" } ?? ""
        switch reason {
        case .missing: return "\(file): missing"
        case .wrongSize(let expected, let found): return "\(file): \(found) bytes, \(expected) expected"
        case .chunkFailsAuthentication(let chunk): return "\(file)\(at): chunk \(chunk) fails authentication"
        case .digestMismatch: return "\(file): its bytes do not match the SHA-256 its entry recorded"
        case .unreadable(let errno): return "\(file)\(at): cannot be read (\(errno))"
        }
    }
}
