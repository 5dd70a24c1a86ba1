import HTTPTypes
import Hummingbird
import NIOCore

#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Injects ``ServerFaults`` around everything behind it (the idempotency
/// middleware included). Faults that happen "after apply" run the request
/// first, so the write is done on the server while the client is told
/// nothing useful: exactly the case idempotency keys exist for. A
/// ``ServerFaults/slowApply`` draw is only marked on the context here, for
/// ``SlowApplyMiddleware`` behind the idempotency middleware.
struct FaultInjectionMiddleware: RouterMiddleware {
    typealias Context = ReferenceContext
    let draw: FaultDraw

    struct DroppedConnection: Error {}

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // Only writes are disturbed; the ledger endpoint stays reliable.
        guard request.method != .get, let fault = draw.next() else { return try await next(request, context) }
        let faults = draw.faults
        switch fault {
        case .serverError:
            return Response(status: .serviceUnavailable)
        case .tooManyRequests:
            var headers = HTTPFields()
            headers[.retryAfter] = String(faults.retryAfterSeconds)
            return Response(status: .tooManyRequests, headers: headers)
        case .slow:
            try await Task.sleep(for: faults.slowDelay)
            return try await next(request, context)
        case .delayPastTimeout:
            let response = try await next(request, context)
            try await Task.sleep(for: faults.timeoutDelay)
            return response
        case .slowApply:
            // Acted on behind the idempotency middleware (SlowApplyMiddleware).
            var context = context
            context.slowApplyDelay = faults.slowApplyDelay
            return try await next(request, context)
        case .dropAfterApply:
            _ = try await next(request, context)
            try? await context.channel.close()
            throw DroppedConnection()
        case .closeBeforeResponse:
            try? await context.channel.close()
            throw DroppedConnection()
        case .resetAfterApply:
            _ = try await next(request, context)
            // SO_LINGER 0: close sends RST instead of FIN.
            if let socket = context.channel as? any SocketOptionProvider {
                try? await socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
            }
            try? await context.channel.close()
            throw DroppedConnection()
        case .halfOpen:
            _ = try await next(request, context)
            // No answer. The client's FIN may only half-close the channel,
            // so the hold is bounded rather than waiting for the close.
            try? await Task.sleep(for: faults.halfOpenHold)
            try? await context.channel.close()
            throw DroppedConnection()
        case .idleClose:
            let response = try await next(request, context)
            let channel = context.channel
            channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(faults.idleCloseDelay.components.attoseconds / 1_000_000_000)
                + faults.idleCloseDelay.components.seconds * 1_000_000_000)) { channel.close(promise: nil) }
            return response
        case .seeOther:
            var response = try await next(request, context)
            guard (200..<300).contains(response.status.code) else { return response }
            response.status = .seeOther
            response.headers[.location] = request.uri.path
            return response
        }
    }
}
