import Foundation
import OutboxLog
import SystemPackage

#if canImport(Darwin)
import Darwin
#endif

/// How a spool writer tells the queue's owner that a spool is ready, and
/// how the owner notices.
///
/// - On Apple platforms: a Darwin notification (`notify_post`) named after
///   the queue's directory (a keyed hash, nothing readable), which the
///   owner's ``OutboxSpoolWatch`` receives at once — across the processes
///   of an App Group.
/// - Everywhere (and also on Apple platforms, for a writer killed before it
///   posted): the writer creates the empty file `POKE` in the queue's
///   spools directory; the owner's watch looks for it every
///   `pollInterval`, deletes it, then moves the spools in. The file is
///   created after the spool is closed, and deleted before the owner lists
///   the spools, so no poke can be lost between the two.
enum SpoolPoke {
    /// The Darwin notification name for the spools in `spools`.
    static func notificationName(_ spools: FilePath) -> String {
        "swift-outbox.spool." + (spools.lastComponent?.string ?? "")
    }

    /// Tells the owner. Best effort: a lost poke delays ingestion until the
    /// owner's next full look (or its next open), it loses nothing. Blocking.
    static func post(_ spools: FilePath, fileSystem: any FileSystem) {
        if let descriptor = try? fileSystem.openFile(SpoolLayout.poke(spools), mode: .createOrOpen) {
            try? fileSystem.close(descriptor)
        }
        #if canImport(Darwin)
        _ = notify_post(notificationName(spools))
        #endif
    }

    /// Whether a writer poked since the last call; consumes the poke. Blocking.
    static func take(_ spools: FilePath, fileSystem: any FileSystem) -> Bool {
        let poke = SpoolLayout.poke(spools)
        guard (try? fileSystem.itemKind(at: poke)) == .file else { return false }
        try? fileSystem.removeFile(poke)
        return true
    }
}

#if canImport(Darwin)
/// A registration for the Darwin notification of a queue's spools.
final class SpoolNotification: @unchecked Sendable {
    // The token is written once in init and read once in cancel.
    private var token: Int32 = -1

    init?(_ spools: FilePath, queue: DispatchQueue, handler: @escaping @Sendable () -> Void) {
        let status = notify_register_dispatch(SpoolPoke.notificationName(spools), &token, queue) { _ in handler() }
        guard status == 0 else { return nil }  // NOTIFY_STATUS_OK
    }

    func cancel() { _ = notify_cancel(token) }
}
#endif
