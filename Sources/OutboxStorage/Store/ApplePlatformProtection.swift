import SystemPackage

#if canImport(Darwin)
import Foundation

/// Apple platforms only: how the outbox's root is kept from other eyes.
///
/// - Data protection `completeUntilFirstUserAuthentication` on the root and
///   each queue's directory: files created in them inherit it, so they are
///   encrypted by the device's key until the user first unlocks the device
///   after a restart, and readable from then on — also while it is locked
///   again, so a background task can still drain the outbox. The trade-off:
///   `complete` would protect the files while the device is locked too, but
///   then a background task of a locked device could not open the outbox at
///   all; and before the first unlock after a restart no task can drain it
///   with either class (an open fails with an I/O error; the entries wait).
/// - Excluded from backups: a queue restored onto another device would send
///   writes again that this device has already delivered, and its files
///   would leave the device in a backup.
///
/// Failures are ignored: both are extra layers over the 0600/0700 modes,
/// not conditions of the open.
enum ApplePlatformProtection {
    static func apply(to directory: FilePath) {
        let protection: [FileAttributeKey: Any] = [.protectionKey: FileProtectionType.completeUntilFirstUserAuthentication]
        // The directory (new files inherit it), then what it already holds.
        try? FileManager.default.setAttributes(protection, ofItemAtPath: directory.string)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.string)) ?? [] {
            try? FileManager.default.setAttributes(protection, ofItemAtPath: directory.appending(name).string)
        }
        var url = URL(fileURLWithPath: directory.string, isDirectory: true)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try? url.setResourceValues(values)
    }
}
#else
/// Data protection and backup exclusion exist on Apple platforms only.
enum ApplePlatformProtection {
    static func apply(to directory: FilePath) {}
}
#endif
