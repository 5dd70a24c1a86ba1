import Foundation
import OutboxTorture
import Testing

// The spool mode, short (in the serialized short profile: it spawns many
// processes).
extension ShortProfileTests {
    @Test(
        "spool: writers spool while the owner runs and write directly while it is down, and long runs go through one spool writer; kills lose nothing",
        arguments: [18 as UInt64])
    func spool(seed: UInt64) async throws {
        let report = try await TortureHarness.run([.spool], seed: seed, cycles: 2)
        TortureHarness.expectClean(report, .spool)
        let details = report[.spool].details
        #expect((details["enqueues spooled"] ?? 0) > 0, "\(report.text)")
        #expect((details["enqueues direct"] ?? 0) > 0, "\(report.text)")
        #expect((details["enqueues stream spooled"] ?? 0) > 0, "\(report.text)")
        #expect((details["owners killed"] ?? 0) > 0, "\(report.text)")
    }
}
