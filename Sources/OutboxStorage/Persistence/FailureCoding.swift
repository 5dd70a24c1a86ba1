import OutboxModel
/// The binary form of what an entry keeps about its failures
/// (``FailureInfo``), written alike in its state record and in the store
/// checkpoint, and decoded here only:
///
/// ```
/// u8 fields (1 failure, 2 first answer, 4 outcome unknown; no other bit)
/// [u8 cause (`OutboxFailure.Cause.code`)
///  · [u8 dependency failure (`OutboxDependencyFailure.code`, StatusCodes.swift) · 16 parent id]   — cause 13 only
///  · i32 httpStatus (−1: none, else 100…999) · str? message (at most 2,048 bytes)]  — field 1
/// [i64 firstAnsweredAt (ms)]                                                      — field 2
/// [i64 outcomeUnknownSince (ms)]                                                  — field 4
/// ```
/// Decoding accepts only what encoding writes: a cause code, a dependency
/// code or a field no store writes, an HTTP status other than −1 and
/// 100…999, or a longer message is damage.
enum FailureCoding {
    private static let failureField: UInt8 = 1
    private static let answeredField: UInt8 = 2
    private static let unknownOutcomeField: UInt8 = 4
    private static let dependencyCause: UInt8 = 13

    /// The bytes `info` takes (fields 0 for none).
    static func encode(_ info: FailureInfo?, into writer: inout ByteWriter) {
        let last = info?.last?.kept
        let firstAnsweredAt = info?.firstAnsweredAt
        let unknownSince = info?.outcomeUnknownSince
        writer.integer(
            (last == nil ? 0 : failureField) | (firstAnsweredAt == nil ? 0 : answeredField)
                | (unknownSince == nil ? 0 : unknownOutcomeField))
        if let last {
            writer.integer(last.cause.code)
            if case .dependency(let dependency) = last.cause {
                writer.integer(dependency.code)
                writer.uuid(dependency.parent.uuid)
            }
            writer.integer(Int32(clamping: last.httpStatus ?? -1))
            writer.optionalString(last.message)
        }
        if let firstAnsweredAt { writer.integer(firstAnsweredAt) }
        if let unknownSince { writer.integer(unknownSince) }
    }

    /// What `encode` wrote: `nil` for fields 0.
    static func decode(_ reader: inout ByteReader) throws(ByteReader.Failure) -> FailureInfo? {
        let fields = try reader.integer(UInt8.self)
        guard fields & ~(failureField | answeredField | unknownOutcomeField) == 0 else {
            throw ByteReader.Failure(reason: "unknown failure fields \(fields)")
        }
        guard fields != 0 else { return nil }
        var info = FailureInfo()
        if fields & failureField != 0 { info.last = try decodeFailure(&reader) }
        if fields & answeredField != 0 { info.firstAnsweredAt = try reader.date("the first answer's time") }
        if fields & unknownOutcomeField != 0 { info.outcomeUnknownSince = try reader.date("the unknown outcome's time") }
        return info
    }

    private static func decodeFailure(_ reader: inout ByteReader) throws(ByteReader.Failure) -> OutboxFailure {
        let code = try reader.integer(UInt8.self)
        var dependency: OutboxDependencyFailure?
        if code == dependencyCause {
            let dependencyCode = try reader.integer(UInt8.self)
            dependency = OutboxDependencyFailure(code: dependencyCode, parent: OutboxEntryID(bytes: try reader.slice(16)))
            guard dependency != nil else { throw ByteReader.Failure(reason: "unknown dependency failure \(dependencyCode)") }
        }
        guard let cause = OutboxFailure.Cause(code: code, dependency: dependency) else {
            throw ByteReader.Failure(reason: "unknown failure cause \(code)")
        }
        let httpStatus = try reader.integer(Int32.self)
        guard httpStatus == -1 || OutboxFailure.httpStatuses.contains(Int(httpStatus)) else {
            throw ByteReader.Failure(reason: "HTTP status \(httpStatus)")
        }
        let message = try reader.optionalString()
        if let message, message.utf8.count > OutboxFailure.maximumMessageBytes {
            throw ByteReader.Failure(reason: "a failure message of \(message.utf8.count) bytes")
        }
        return OutboxFailure(cause, httpStatus: httpStatus < 0 ? nil : Int(httpStatus), message: message)
    }
}

extension OutboxFailure.Cause {
    /// The cause's code on disk (1…17, Docs/STORE-FORMAT.md); a dependency
    /// failure's own code and parent follow its 13.
    package var code: UInt8 {
        switch self {
        case .notSent: 1
        case .interrupted: 2
        case .leaseExpired: 3
        case .inProgress: 4
        case .unavailable: 5
        case .transient: 6
        case .handlerError: 7
        case .attemptsUsedUp: 8
        case .permanent: 9
        case .expired: 10
        case .payloadFileDamaged: 11
        case .unresolvedReference: 12
        case .dependency: 13
        case .conflict: 14
        case .alreadyProcessed: 15
        case .inProgressTooLong: 16
        case .keyMayBeForgotten: 17
        }
    }

    /// The cause `code` stands for (`dependency` is code 13's parent and
    /// fate); `nil` for a code no store writes.
    package init?(code: UInt8, dependency: OutboxDependencyFailure?) {
        let simple: [OutboxFailure.Cause] = [
            .notSent, .interrupted, .leaseExpired, .inProgress, .unavailable, .transient, .handlerError, .attemptsUsedUp,
            .permanent, .expired, .payloadFileDamaged, .unresolvedReference,
        ]
        switch code {
        case 1...12: self = simple[Int(code) - 1]
        case 13:
            guard let dependency else { return nil }
            self = .dependency(dependency)
        case 14: self = .conflict
        case 15: self = .alreadyProcessed
        case 16: self = .inProgressTooLong
        case 17: self = .keyMayBeForgotten
        default: return nil
        }
    }
}
