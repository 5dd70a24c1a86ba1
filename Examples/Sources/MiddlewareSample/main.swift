import Foundation
import Hummingbird
import IdempotencyKeyMiddleware

struct NewMessage: Decodable {                   // what the app sample's SendMessage sends
    let conversationID: String
    let body: String
}

struct Created: ResponseEncodable {
    let id: String
}

let keys = try await LogIdempotencyKeyStore.open(at: "data/idempotency")   // durable; or your database
let router = Router()
router.add(middleware: IdempotencyMiddleware(store: keys))
router.post("conversations/:conversation/messages") { request, context -> EditedResponse<Created> in
    let message = try await request.decode(as: NewMessage.self, context: context)
    print("new message in \(message.conversationID): \(message.body)")   // once per Idempotency-Key: save it here
    return EditedResponse(status: .created, response: Created(id: UUID().uuidString))
}

let port = Int(ProcessInfo.processInfo.environment["PORT"] ?? "") ?? 8081
let limits = ConnectionLimits()                  // idle timeout, head and body deadlines, connection cap
let app = Application(
    router: router, server: limits.http1(),
    configuration: limits.apply(to: .init(address: .hostname("127.0.0.1", port: port))))
try await app.runService()                       // until SIGINT or SIGTERM
