import CLITestSupport
import Foundation
import OutboxLogTesting
import Testing

@testable import OutboxLog

/// An expiry is stored rounded up to its millisecond, and reads back as a
/// `Date` that stores as the same millisecond: a record copied from one log
/// to another (read, then written again) keeps its expiry exactly.
@Suite("Record expiry")
struct RecordExpiryTests {
    @Test("every stored millisecond reads back as a date that stores as itself")
    func millisecondsRoundTrip() {
        var random = SplitMix64(seed: TestSeed.take())
        let edges: [Int64] = [0, 1, -1, 999, 1_000, 1_767_225_600_123, -62_135_596_800_000, 253_402_300_799_999,
                              Int64(RecordExpiry.limit) - 1, -Int64(RecordExpiry.limit) + 1,
                              Int64((Date.distantFuture.timeIntervalSince1970 * 1000).rounded(.up))]
        let drawn = (0..<20_000).map { _ in
            Int64(bitPattern: random.next()) % Int64(RecordExpiry.limit) >> Int64(random.next() % 40)
        }
        for milliseconds in edges + drawn {
            #expect(RecordExpiry.milliseconds(RecordExpiry.date(milliseconds)) == milliseconds, "\(milliseconds)")
        }
    }

    @Test("a date is rounded up, never down: a record is never removed before the time it was given")
    func roundsUp() {
        var random = SplitMix64(seed: TestSeed.take())
        for _ in 0..<20_000 {
            let seconds = Double(Int64(bitPattern: random.next()) % Int64(RecordExpiry.limit - 1000)) / 1000
                + Double(random.next() % 1000) / 1e6
            let date = Date(timeIntervalSince1970: seconds)
            guard let stored = RecordExpiry.milliseconds(date) else {
                Issue.record("\(seconds) s has no milliseconds")
                continue
            }
            #expect(Double(stored) >= date.timeIntervalSince1970 * 1000, "\(seconds)")
            #expect(Double(stored) - date.timeIntervalSince1970 * 1000 < 1.001, "\(seconds): rounded up by at most a millisecond")
        }
    }

    @Test("the expiries passed at a time are those at or before it: rounded down, where an expiry is rounded up")
    func passedRoundsDown() {
        var random = SplitMix64(seed: TestSeed.take())
        for _ in 0..<20_000 {
            let milliseconds = Int64(bitPattern: random.next()) % Int64(RecordExpiry.limit - 2)
            #expect(RecordExpiry.passed(at: RecordExpiry.date(milliseconds)) == milliseconds, "\(milliseconds)")
            let now = Date(timeIntervalSince1970: Double(milliseconds) / 1000 + Double(random.next() % 1000) / 1e6)
            let passed = RecordExpiry.passed(at: now)
            #expect(RecordExpiry.date(passed) <= now && RecordExpiry.date(passed + 1) > now, "\(now.timeIntervalSince1970)")
        }
        #expect(RecordExpiry.passed(at: Date(timeIntervalSince1970: .nan)) == .min)
        #expect(RecordExpiry.passed(at: Date(timeIntervalSince1970: .infinity)) == .max)
        #expect(RecordExpiry.passed(at: Date(timeIntervalSince1970: -.infinity)) == .min)
    }

    @Test("a date the format cannot hold has no milliseconds; a crafted stored value beyond the limit converts without a trap")
    func limits() {
        for seconds in [Double.infinity, -.infinity, .nan, 1e12, -1e12, 1e300] {
            #expect(RecordExpiry.milliseconds(Date(timeIntervalSince1970: seconds)) == nil, "\(seconds)")
        }
        for milliseconds in [Int64.max, Int64.min, Int64(RecordExpiry.limit), -Int64(RecordExpiry.limit)] {
            #expect(RecordExpiry.date(milliseconds).timeIntervalSince1970.isFinite)
        }
    }
}
