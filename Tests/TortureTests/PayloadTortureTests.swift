import Foundation
import OutboxTorture
import Testing

// The payload mode, short (in the serialized short profile: it spawns the
// app as a child process and kills it with SIGKILL).
extension ShortProfileTests {
    @Test("payload: the app SIGKILLed between a payload file's write and its entry's record; damaged files quarantined; each upload applied once, no file left", arguments: [71 as UInt64])
    func payload(seed: UInt64) async throws {
        // Cycles 0, 2 and 4 kill at fileCreated, fileWritten and fileSynced
        // (before the entry's record); 1 and 3 damage a closed queue's file.
        let report = try await TortureHarness.run([.payload], seed: seed, cycles: 5)
        TortureHarness.expectClean(report, .payload)
        #expect((report[.payload].details.filter { $0.key.hasPrefix("apps killed") }.values.reduce(0, +)) > 0, "\(report.text)")
    }
}
