import Foundation
import HTTPTypes
import IdempotencyKeyMiddleware
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
/// is refused. Every `/api/` request must also carry the
/// `X-Outbox-Inspector` header and, if it has an `Origin`, this server's
/// own: another site's page cannot send that header without a CORS
/// preflight, which this server never grants — so it can neither act nor
/// make the inspector open the queue. Connections are capped
/// (``connections``) and so are held requests (``InspectedQueue/mostHeld``):
/// however many clients come, the process keeps its descriptors.
enum InspectorServer {
    static let actionHeader = HTTPField.Name("X-Outbox-Inspector")!

    /// Idle, slow and surplus clients closed or left in the backlog (the
    /// reference server's hygiene), at most 64 connections: one person's pages.
    static let connections: ConnectionLimits = {
        var limits = ConnectionLimits()
        limits.maximumConnections = 64
        return limits
    }()

    /// Starts serving on 127.0.0.1:`port` (0: any free port); returns the
    /// port bound and the task serving (cancel it to stop).
    static func start(queue: InspectedQueue, port: Int) async throws -> (port: Int, task: Task<Void, any Error>) {
        let router = Router()
        router.add(middleware: LoopbackOnly())
        register(on: router, queue: queue)
        var quiet = Logger(label: "outbox.inspect")
        quiet.logLevel = .critical
        do {
            let server = try await ListeningServer.start(router, host: "127.0.0.1", port: port, limits: connections, logger: quiet)
            return (server.port, server.task)
        } catch {
            throw CommandFailure(error.description, exitCode: CommandFailure.cannotOpen)
        }
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
            guard let id = entryID(context) else {
                return json(InspectorErrorJSON(error: "not an entry id"), status: .badRequest)
            }
            return await answer { InspectorEntryJSON(detail: try await queue.detail(of: id), actionsAllowed: queue.actionsAllowed) }
        }
        for action in InspectorAction.allCases {
            router.post("api/entries/:id/\(action.rawValue)") { request, context in
                guard queue.actionsAllowed else {
                    return json(InspectorErrorJSON(error: "read-only: start outbox inspect with --allow-actions"), status: .forbidden)
                }
                guard let id = entryID(context) else {
                    return json(InspectorErrorJSON(error: "not an entry id"), status: .badRequest)
                }
                return await answer {
                    let cascade = try await queue.act(action, on: id)
                    return InspectorActionJSON(action: action.rawValue, id: id.description, dependents: cascade.dependents.map(\.description))
                }
            }
        }
    }

    /// The path's entry id: its UUID or `local:` form, percent-encoded or not
    /// (a page encodes the colon).
    private static func entryID(_ context: BasicRequestContext) -> OutboxEntry.ID? {
        context.parameters.get("id").flatMap { $0.removingPercentEncoding }.flatMap(OutboxEntry.ID.init)
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

/// Refuses a request whose `Host` is not a loopback name, and an `/api/`
/// request without the page's header or from another origin (see
/// ``InspectorServer``).
struct LoopbackOnly: RouterMiddleware {
    typealias Context = BasicRequestContext
    static let hosts = ["127.0.0.1", "localhost", "[::1]"]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let authority = request.head.authority, Self.isLoopback(authority) else {
            return InspectorServer.json(InspectorErrorJSON(error: "only http://127.0.0.1 or localhost is served"), status: .misdirectedRequest)
        }
        if request.uri.path.hasPrefix("/api/") {
            guard request.headers[InspectorServer.actionHeader] != nil else {
                return InspectorServer.json(
                    InspectorErrorJSON(error: "the API answers the inspector's page only (\(InspectorServer.actionHeader))"), status: .forbidden)
            }
            if let origin = request.headers[.origin], origin.lowercased() != "http://" + authority.lowercased() {
                return InspectorServer.json(InspectorErrorJSON(error: "the API answers this page's origin only"), status: .forbidden)
            }
        }
        return try await next(request, context)
    }

    /// Whether `authority` is exactly a loopback name, with a port or without.
    static func isLoopback(_ authority: String) -> Bool {
        let lowered = authority.lowercased()
        return hosts.contains { host in
            guard lowered.hasPrefix(host) else { return false }
            let rest = lowered.dropFirst(host.count)
            guard let port = rest.first == ":" ? rest.dropFirst() : (rest.isEmpty ? Substring("0") : nil) else { return false }
            return (1...5).contains(port.count) && port.allSatisfy(\.isASCII) && port.allSatisfy(\.isNumber)
        }
    }
}
