import Foundation
import Testing

/// Bugs planted on purpose, so that Scripts/sanitize.sh can show in every
/// run that a sanitizer report really fails it: the step runs this suite
/// alone under each sanitizer, with its reports sent to a folder of their
/// own, and fails if the planted bug is not reported there.
///
/// They run only when `OUTBOX_SANITIZER_CANARY` names them (`race`,
/// `overflow`); in a plain `swift test` they are skipped and say why.
@Suite("Sanitizer canary")
struct SanitizerCanaryTests {
    static let requested = ProcessInfo.processInfo.environment["OUTBOX_SANITIZER_CANARY"]

    /// Shared by two threads with no lock at all.
    final class Unguarded: @unchecked Sendable {
        var count = 0
    }

    @Test(
        "a race for ThreadSanitizer: two threads increment one unguarded counter",
        .enabled(if: requested == "race", "only when Scripts/sanitize.sh plants it (OUTBOX_SANITIZER_CANARY=race)"))
    func race() {
        let shared = Unguarded()
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            Thread {
                for _ in 0..<10_000 { shared.count += 1 }
                done.signal()
            }.start()
        }
        done.wait()
        done.wait()
        #expect(shared.count > 0)
    }

    @Test(
        "a heap overflow for AddressSanitizer: a read one byte past a 16-byte allocation",
        .enabled(if: requested == "overflow", "only when Scripts/sanitize.sh plants it (OUTBOX_SANITIZER_CANARY=overflow)"))
    func overflow() {
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 16)
        buffer.initialize(repeating: 7, count: 16)
        defer { buffer.deallocate() }
        let pastTheEnd = buffer[16]  // no bounds check on a pointer: only ASan sees this
        #expect(pastTheEnd >= 0)
    }
}
