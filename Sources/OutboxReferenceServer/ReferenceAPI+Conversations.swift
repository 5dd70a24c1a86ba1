import Hummingbird

extension ReferenceAPI {
    /// The route of README.md's app sample, with its `SendMessage` payload:
    ///
    /// ```
    /// POST /conversations/{conversation}/messages  {"conversationID","body"}
    ///   → 201 {"id": "msg-N"}
    ///   → 422 if `body` is missing or empty, if `conversationID` is not the
    ///         path's conversation, or if the body has #reject (moderation)
    /// ```
    ///
    /// Applied writes are counted with the other messages and recorded under
    /// their idempotency key, like every write.
    func registerConversations(on router: Router<ReferenceContext>) {
        router.post("conversations/:conversation/messages") { [self] request, context in
            let fields = try await json(request, context)
            let conversation = context.parameters.get("conversation") ?? ""
            guard let body = fields["body"] as? String, !body.isEmpty else {
                return reject(["error": "expected a JSON object with a non-empty \"body\""])
            }
            if let named = fields["conversationID"], (named as? String) != conversation {
                return reject(["error": "conversationID \(named) is not the conversation \(conversation) of the path"])
            }
            guard !body.contains("#reject") else { return reject(["error": "message rejected by moderation"]) }
            return try await apply(.message(conversation: conversation, text: body), request)
        }
    }
}
