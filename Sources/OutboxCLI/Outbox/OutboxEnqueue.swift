import ArgumentParser
import Outbox
import OutboxLog

/// `outbox enqueue DIR --count N --size BYTES [--endpoint "POST /posts"] [--user U] [--scope S] [--type T]`
struct OutboxEnqueue: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Enqueue entries with deterministic payloads, printing each one's id and idempotency key.",
        discussion: """
            Entry i (from 0) gets a payload of exactly --size bytes. When --size is at least the \
            length of {"n":<i>,"pad":""}, the payload is that JSON object with "pad" filled with \
            "x" up to --size bytes, sent with Content-Type: application/json; a smaller --size \
            gives the text "<i>." repeated and cut to --size bytes (no JSON, no Content-Type). \
            Each entry is printed as "<id> <idempotency-key>" on its own line as soon as its \
            enqueue has returned: enqueue is durable, so a printed entry survives a crash or a \
            power loss. Creates DIR and the user's queue if missing.
            """
    )

    @OptionGroup var options: OutboxRootOptions

    @Option(help: "How many entries to enqueue (at least 1).")
    var count: Int

    @Option(help: "The payload size of each entry, in bytes.")
    var size: Int

    @Option(help: "The request: an HTTP method, one space and a path starting with /.")
    var endpoint = "POST /posts"

    @Option(help: "The user (partition) whose queue receives the entries.")
    var user = "default"

    @Option(help: "Entries with the same scope are sent one at a time, in order (default: none).")
    var scope: String?

    @Option(help: "The entries' type: which handler delivers them.")
    var type = "post"

    func validate() throws {
        guard count >= 1 else { throw ValidationError("--count must be at least 1, not \(count)") }
        guard size >= 0 else { throw ValidationError("--size must not be negative, not \(size)") }
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
        guard !type.isEmpty else { throw ValidationError("--type must not be empty") }
        if scope?.isEmpty == true { throw ValidationError("--scope must not be empty") }
        let request = try Self.parseEndpoint(endpoint)
        let maximum = Self.maximumPayloadSize(
            strings: [request.method, request.path, user, type, scope ?? "", Self.jsonHeaders.description])
        guard size <= maximum else {
            throw ValidationError("--size \(size) is too large: an entry holds at most about \(maximum) payload bytes")
        }
    }

    func run() async throws {
        let (method, path) = try Self.parseEndpoint(endpoint)
        try await options.withStore(user: user, create: true) { store in
            for index in 0..<count {
                let (payload, isJSON) = Self.payload(index: index, size: size)
                let request = OutboxEnqueueRequest(
                    type: type, method: method, endpoint: path, payload: payload,
                    headers: isJSON ? Self.jsonHeaders : [:], scope: scope)
                switch try await store.enqueue(request) {
                case .enqueued(let entry), .coalesced(let entry, _):
                    StandardStreams.writeLine("\(entry.id) \(entry.idempotencyKey)")
                case .duplicate(let id, _):
                    throw CommandFailure(
                        "entry \(id) was already enqueued", exitCode: CommandFailure.operationFailed)
                }
            }
        }
    }

    static let jsonHeaders = ["Content-Type": "application/json"]

    /// `"METHOD /path"`: the method (letters, upper-cased) and the path.
    static func parseEndpoint(_ text: String) throws(ValidationError) -> (method: String, path: String) {
        let parts = text.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let method = parts.first, let path = parts.last,
            !method.isEmpty, method.allSatisfy({ $0.isASCII && $0.isLetter }),
            path.hasPrefix("/"), !path.contains(where: { $0.isWhitespace })
        else {
            throw ValidationError("--endpoint \"\(text)\" is not \"METHOD /path\" (for example \"POST /posts\")")
        }
        return (method.uppercased(), String(path))
    }

    /// Entry `index`'s payload of exactly `size` bytes, and whether it is JSON:
    /// `{"n":<index>,"pad":"xx…"}` when it fits, else `"<index>."` repeated
    /// and cut to `size`.
    static func payload(index: Int, size: Int) -> (bytes: [UInt8], isJSON: Bool) {
        let prefix = Array("{\"n\":\(index),\"pad\":\"".utf8)
        let suffix = Array("\"}".utf8)
        let padding = size - prefix.count - suffix.count
        if padding >= 0 {
            return (prefix + [UInt8](repeating: UInt8(ascii: "x"), count: padding) + suffix, true)
        }
        let unit = Array("\(index).".utf8)
        return ((0..<size).map { unit[$0 % unit.count] }, false)
    }

    /// The largest payload an entry can carry in one log record with these
    /// strings: the log's record limit, minus the record frame and the
    /// entry's fixed fields (a generous estimate), minus the strings.
    static func maximumPayloadSize(strings: [String]) -> Int {
        let frame = LogWrite.value(LogKey(String(repeating: "E", count: 17)), []).frameSize
        let fixedFields = 256
        let text = strings.reduce(0) { $0 + $1.utf8.count + 4 }
        return OutboxStoreConfiguration().log.maximumRecordSize - frame - fixedFields - text
    }
}
