import Foundation
import OutboxLocking
import OutboxLog
import OutboxModel

/// The owner's watch on its queue's spools: moves spooled entries in as
/// soon as a writer pokes (``LogOutboxStore/watchSpools(pollInterval:onIngested:)``).
///
/// How it notices: a Darwin notification on Apple platforms, at once; and
/// everywhere, the `POKE` file a writer creates, looked for every
/// `pollInterval` (one `stat`); every 20 intervals it also lists the
/// spools, for a writer killed before it could poke. Cancel it before
/// closing the store (a look in progress finishes first; a closed store
/// ends the watch by itself).
public final class OutboxSpoolWatch: Sendable {
    private let task: Task<Void, Never>
    #if canImport(Darwin)
    private let notification: SpoolNotification?
    #endif

    init(
        ingestor: SpoolIngestor, pollInterval: Duration,
        onIngested: @escaping @Sendable (OutboxSpoolReport) async -> Void
    ) {
        let wakeup = Wakeup()
        #if canImport(Darwin)
        notification = SpoolNotification(ingestor.spools, queue: .global(qos: .utility)) {
            ingestor.notePoke()
            wakeup.signal()
        }
        #endif
        task = Task {
            var round = 0
            while !Task.isCancelled {
                let spools = ingestor.spools
                let fileSystem = ingestor.configuration.fileSystem
                let poked = (try? await offThePool { () throws(OutboxError) -> Bool in
                    let kind = try? fileSystem.itemKind(at: SpoolLayout.poke(spools))
                    return kind == .file
                }) ?? false
                if poked { ingestor.notePoke() }
                if ingestor.wasPoked || round % 20 == 0 {
                    do {
                        let report = try await ingestor.ingest()
                        if report.ingested + report.quarantined > 0 { await onIngested(report) }
                    } catch {
                        return  // the store failed or was closed
                    }
                }
                round += 1
                await Self.sleep(pollInterval, or: wakeup)
            }
        }
    }

    /// Stops watching.
    public func cancel() {
        task.cancel()
        #if canImport(Darwin)
        notification?.cancel()
        #endif
    }

    /// Waits `interval`, or less if `wakeup` is signalled.
    private static func sleep(_ interval: Duration, or wakeup: Wakeup) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: interval) }
            group.addTask { await wakeup.wait() }
            await group.next()
            group.cancelAll()
            wakeup.signal()  // release the waiter if the timer won
        }
    }
}

extension LogOutboxStore {
    /// Watches this queue's spools: whenever another process spools entries
    /// (`enqueue(_:root:partition:configuration:)`), moves them in and
    /// calls `onIngested` — where an app asks its dispatcher to send them
    /// (`await dispatcher.flush()`).
    ///
    /// - Parameters:
    ///   - pollInterval: how often to look for a writer's poke file (on
    ///     Apple platforms the Darwin notification comes at once; the poll
    ///     is the backstop).
    ///   - onIngested: called after each look that moved entries in, with
    ///     what it did.
    public func watchSpools(
        pollInterval: Duration = .milliseconds(250),
        onIngested: @escaping @Sendable (OutboxSpoolReport) async -> Void = { _ in }
    ) -> OutboxSpoolWatch {
        OutboxSpoolWatch(ingestor: spools, pollInterval: pollInterval, onIngested: onIngested)
    }
}
