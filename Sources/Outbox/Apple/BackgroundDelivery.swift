#if canImport(BackgroundTasks) && (os(iOS) || os(tvOS) || os(visionOS))
import BackgroundTasks
import Foundation

/// Delivers the outbox while the app is in the background, from a
/// `BGProcessingTask` (iOS, tvOS, visionOS; this file is compiled nowhere
/// else, and not on this project's Linux CI: keep it small).
///
/// 1. List `identifier` in the app's Info.plist under
///    `BGTaskSchedulerPermittedIdentifiers`, and enable the "Background
///    processing" background mode.
/// 2. Call ``register(identifier:budget:dispatcher:)`` before the app
///    finishes launching.
/// 3. Call ``schedule(identifier:after:)`` when the app goes to the
///    background with writes unsent (the handler reschedules itself while
///    writes are left).
///
/// The handler runs ``OutboxDispatcher/drain(until:)`` for `budget`; when
/// the system ends the task early, its expiration handler cancels the
/// drain, which records every running attempt (nothing stays in flight)
/// before the task is marked complete.
@available(iOS 16, tvOS 16, visionOS 1, *)
public enum OutboxBackgroundDelivery {
    /// Registers the launch handler for `identifier`. `dispatcher` gives the
    /// app's dispatcher, or `nil` when there is none to drain (no user
    /// signed in): the task then completes at once.
    ///
    /// - Returns: whether the system accepted the registration (`false` if
    ///   `identifier` is not in the Info.plist).
    @discardableResult
    public static func register(
        identifier: String, budget: Duration = .seconds(25),
        dispatcher: @escaping @Sendable () async -> OutboxDispatcher?
    ) -> Bool {
        BGTaskScheduler.shared.register(forTaskWithIdentifier: identifier, using: nil) { task in
            let task = SystemTask(task)
            let drain = Task {
                guard let dispatcher = await dispatcher() else { return task.complete(success: true) }
                let report = await dispatcher.drain(until: Date().addingTimeInterval(seconds(budget)))
                if let left = try? await dispatcher.summary().unsent, left > 0 { try? schedule(identifier: identifier) }
                task.complete(success: report.errors.isEmpty)
            }
            task.onExpiration { drain.cancel() }  // drain(until:) then records what runs, and returns
        }
    }

    /// Asks the system to run the task once the network is available, no
    /// earlier than `after` from now.
    public static func schedule(identifier: String, after: Duration = .seconds(15 * 60)) throws {
        let request = BGProcessingTaskRequest(identifier: identifier)
        request.requiresNetworkConnectivity = true
        request.earliestBeginDate = Date().addingTimeInterval(seconds(after))
        try BGTaskScheduler.shared.submit(request)
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// The system's task, handed to the drain's task. `BGTask` is not
    /// `Sendable`; its completion and expiration handler are documented as
    /// callable from any thread, and nothing else of it is touched.
    private struct SystemTask: @unchecked Sendable {
        let task: BGTask
        init(_ task: BGTask) { self.task = task }
        func complete(success: Bool) { task.setTaskCompleted(success: success) }
        func onExpiration(_ handler: @escaping @Sendable () -> Void) { task.expirationHandler = handler }
    }
}
#endif
