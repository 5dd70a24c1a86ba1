import Foundation
import Hummingbird
import IdempotencyKeyMiddleware
import IdempotencyKeyPostgres
import Logging
import PostgresNIO

struct NewMessage: Decodable {                   // what the app sample's SendMessage sends
    let conversationID: String
    let body: String
}

let url = ProcessInfo.processInfo.environment["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres"
let port = Int(ProcessInfo.processInfo.environment["PORT"] ?? "") ?? 8082
let logger = Logger(label: "postgres-sample")
let client = PostgresClient(configuration: try PostgresIdempotencyKeyStore.clientConfiguration(url: url))

try await withThrowingDiscardingTaskGroup { group in
    group.addTask { await client.run() }         // the connection pool, for the life of the server
    let keys = try await PostgresIdempotencyKeyStore.open(client: client)   // creates its table on first use
    try await client.query(
        "CREATE TABLE IF NOT EXISTS messages (id bigserial PRIMARY KEY, conversation text NOT NULL, body text NOT NULL)",
        logger: logger)
    let idempotency = IdempotencyMiddleware<BasicRequestContext>.Configuration()
    let router = Router()
    router.add(middleware: IdempotencyMiddleware(store: keys, configuration: idempotency))
    router.post("conversations/:conversation/messages") { request, context -> Response in
        let message = try await request.decode(as: NewMessage.self, context: context)
        let key = request.headers[IdempotencyHTTP.keyHeader].flatMap(IdempotencyHTTP.parseKey)   // the middleware requires one
        // The message and the key's stored response commit together, or neither does.
        let answer = try await keys.withTransaction { db in
            let rows = try await db.query(
                "INSERT INTO messages (conversation, body) VALUES (\(message.conversationID), \(message.body)) RETURNING id",
                logger: logger)
            var id: Int64 = 0
            for try await value in rows.decode(Int64.self) { id = value }
            let answer = StoredResponse(
                status: 201, headers: ["content-type": "application/json"], body: Array(#"{"id":"msg-\#(id)"}"#.utf8))
            if let key {
                try await keys.complete(
                    key: key, response: answer, expiresAt: Date().addingTimeInterval(24 * 3600),
                    owner: idempotency.serverInstance, on: db, logger: logger)
            }
            return answer
        }
        return Response(
            status: .created, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
    let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
    try await app.runService()                   // until SIGINT or SIGTERM
    group.cancelAll()
}
