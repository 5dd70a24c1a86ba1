import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Outbox

/// The inspector's HTTP side: one page (``InspectorPage``), its script and
/// style, and a small JSON API, on loopback only.
///
///     GET  /                          the page
///     GET  /api/queue[?after=MS]      the queue's picture; with `after`, held
///                                     until a picture newer than MS exists
///     GET  /api/entries/ID            one entry: record, explanation, attempts
///     POST /api/entries/ID/retry      with --allow-actions only
///     POST /api/entries/ID/discard    with --allow-actions only
///
/// Every request must name a loopback host (`Host: 127.0.0.1:P` or
/// `localhost:P`): a page elsewhere that rebinds its own name to 127.0.0.1
/// is refused. An action must also carry the `X-Outbox-Inspector` header
/// and, if it has an `Origin`, a loopback one: another site's page cannot
/// send that header without a CORS preflight, which this server never grants.
enum InspectorServer {
    static let actionHeader = HTTPField.Name("X-Outbox-Inspector")!

    /// Starts serving on 127.0.0.1:`port` (0: any free port); returns the
    /// port bound and the task serving (cancel it to stop).
    static func start(queue: InspectedQueue, port: Int) async throws -> (port: Int, task: Task<Void, any Error>) {
        let router = Router()
        router.add(middleware: LoopbackOnly())
        register(on: router, queue: queue)
        var quiet = Logger(label: "outbox.inspect")
        quiet.logLevel = .critical
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: quiet)
        let task = Task { try await app.run() }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next(), bound > 0 else {
            task.cancel()
            throw CommandFailure("cannot listen on 127.0.0.1:\(port)", exitCode: CommandFailure.cannotOpen)
        }
        return (bound, task)
    }

    private static func register(on router: Router<BasicRequestContext>, queue: InspectedQueue) {
        router.get("/") { _, _ in asset(InspectorPage.html, type: "text/html; charset=utf-8") }
        router.get("inspector.js") { _, _ in asset(InspectorPage.script, type: "text/javascript; charset=utf-8") }
        router.get("inspector.css") { _, _ in asset(InspectorPage.style, type: "text/css; charset=utf-8") }
        router.get("api/queue") { request, _ in
            // Milliseconds since 1970; anything else (not a number, not a plausible time) asks for the current picture.
            let after = request.uri.queryParameters.get("after").flatMap(Double.init).flatMap { value in
                value.isFinite && (0...253_402_300_799_000).contains(value) ? value : nil
            }
            return await answer {
                let view = try await queue.look(takenAfter: after)
                return InspectorQueueJSON(
                    user: queue.user, directory: queue.options.directory, source: view.source,
                    actionsAllowed: queue.actionsAllowed, drainRate: view.snapshot.drainRate(), snapshot: view.snapshot)
            }
        }
        router.get("api/entries/:id") { _, context in
            guard let id = context.parameters.get("id").flatMap(OutboxEntry.ID.init) else {
                return json(InspectorErrorJSON(error: "not an entry id"), status: .badRequest)
            }
            return await answer { InspectorEntryJSON(detail: try await queue.detail(of: id), actionsAllowed: queue.actionsAllowed) }
        }
        for action in InspectorAction.allCases {
            router.post("api/entries/:id/\(action.rawValue)") { request, context in
                guard queue.actionsAllowed else {
                    return json(InspectorErrorJSON(error: "read-only: start outbox inspect with --allow-actions"), status: .forbidden)
                }
                guard request.headers[actionHeader] != nil else {
                    return json(InspectorErrorJSON(error: "an action needs the \(actionHeader) header"), status: .forbidden)
                }
                guard let id = context.parameters.get("id").flatMap(OutboxEntry.ID.init) else {
                    return json(InspectorErrorJSON(error: "not an entry id"), status: .badRequest)
                }
                return await answer {
                    let cascade = try await queue.act(action, on: id)
                    return InspectorActionJSON(action: action.rawValue, id: id.description, dependents: cascade.dependents.map(\.description))
                }
            }
        }
    }

    /// `body`'s value as JSON, or its failure as a 409 (the queue refused:
    /// held, unknown entry, wrong state) with the failure's one line.
    private static func answer<Value: Encodable>(_ body: () async throws -> Value) async -> Response {
        do {
            return json(try await body())
        } catch {
            return json(InspectorErrorJSON(error: String(describing: error)), status: .conflict)
        }
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        asset(InspectorJSON.encode(value), type: "application/json", status: status)
    }

    private static func asset(_ bytes: some Sequence<UInt8>, type: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Content-Security-Policy")!] =
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: Array(bytes))))
    }

    private static func asset(_ text: String, type: String) -> Response { asset(Array(text.utf8), type: type) }
}

/// Refuses a request whose `Host` is not a loopback name, and an action
/// whose `Origin` is another site (see ``InspectorServer``).
struct LoopbackOnly: RouterMiddleware {
    typealias Context = BasicRequestContext
    static let hosts: Set<String> = ["127.0.0.1", "localhost", "[::1]"]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let authority = request.head.authority, Self.hosts.contains(Self.host(of: authority)) else {
            return InspectorServer.json(InspectorErrorJSON(error: "only http://127.0.0.1 or localhost is served"), status: .misdirectedRequest)
        }
        if request.method != .get, let origin = request.headers[.origin] {
            guard let url = URL(string: origin), let host = url.host, Self.hosts.contains(host) || Self.hosts.contains("[\(host)]") else {
                return InspectorServer.json(InspectorErrorJSON(error: "actions come from this page only"), status: .forbidden)
            }
        }
        return try await next(request, context)
    }

    /// `authority` without its port.
    static func host(of authority: String) -> String {
        if authority.hasPrefix("["), let end = authority.firstIndex(of: "]") { return String(authority[...end]) }
        return String(authority.split(separator: ":", maxSplits: 1).first ?? "").lowercased()
    }
}
