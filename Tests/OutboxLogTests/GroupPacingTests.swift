@testable import OutboxLog
import Testing

/// After a sync that served one or two producers the writer thread looks
/// for the next append for a moment before it sleeps (an append that finds
/// it awake wakes nobody). The look is a spin: worth it for a producer that
/// appends again at once, a core taken from everyone else when the next
/// append is far off (a server between a key's claim and its response).
/// These drive the pacing through the sequences of syncs and lingers the
/// writer produces.
@Suite("Group pacing: when the writer lingers")
struct GroupPacingTests {
    typealias Pacing = LogCore.GroupPacing

    @Test("a sync that served one producer lingers a quarter of its time, at most the limit; a larger group never")
    func lingerFollowsTheSync() {
        var pacing = Pacing()
        pacing.record(group: 1, took: .microseconds(200))
        #expect(pacing.linger == .microseconds(50))
        pacing.record(group: 1, took: .milliseconds(5))
        #expect(pacing.linger == Pacing.maximumLinger)
        pacing.record(group: 3, took: .microseconds(200))
        #expect(pacing.linger == nil)
    }

    @Test("a linger that found the next append keeps lingering")
    func hitsKeepLingering() {
        var pacing = Pacing()
        for _ in 0..<100 {
            pacing.record(group: 1, took: .microseconds(200))
            #expect(pacing.linger != nil)
            pacing.lingerEnded(foundWork: true)
            #expect(pacing.linger == nil, "one linger per sync")
        }
    }

    @Test("looks that keep missing stop; then one sync in so many looks, and hits bring looking back")
    func missesStopLingering() {
        var pacing = Pacing()
        var looks = 0
        for _ in 0..<200 {
            pacing.record(group: 1, took: .microseconds(200))
            if pacing.linger != nil {
                looks += 1
                pacing.lingerEnded(foundWork: false)
            }
        }
        // Six misses bring the rate under one half; then one probe per 16 syncs.
        #expect(looks == 6 + (200 - 6) / Pacing.syncsBetweenProbes)
        #expect(pacing.lingerHitRate < Pacing.lingerWhileHitRate)
        var syncs = 0
        while pacing.lingerHitRate < Pacing.lingerWhileHitRate {
            syncs += 1
            pacing.record(group: 1, took: .microseconds(200))
            if pacing.linger != nil { pacing.lingerEnded(foundWork: true) }
            if syncs > 1000 { break }
        }
        #expect(syncs <= 8 * Pacing.syncsBetweenProbes, "a producer back at full pace waited \(syncs) syncs for looks")
        pacing.record(group: 1, took: .microseconds(200))
        #expect(pacing.linger != nil)
    }

    @Test("a producer whose next append is found three times in four keeps its looks")
    func mostlyHitsKeepLingering() {
        var pacing = Pacing()
        for sync in 0..<400 {
            pacing.record(group: 1, took: .microseconds(200))
            #expect(pacing.linger != nil, "sync \(sync) did not look")
            pacing.lingerEnded(foundWork: sync % 4 != 3)
        }
    }
}
