import Hummingbird

/// Behind the idempotency middleware: holds a request marked by a
/// ``ServerFaults/slowApply`` fault before its handler applies the write, so
/// its key stays in progress meanwhile. The hold ignores cancellation (a
/// handler that already started its work finishes it, client or no client).
struct SlowApplyMiddleware: RouterMiddleware {
    typealias Context = ReferenceContext
    let activity: ServerActivity

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let delay = context.slowApplyDelay else { return try await next(request, context) }
        activity.update { $0.slowAppliesHeld += 1 }
        await Task { try? await Task.sleep(for: delay) }.value
        activity.update { $0.slowAppliesHeld -= 1 }
        return try await next(request, context)
    }
}
