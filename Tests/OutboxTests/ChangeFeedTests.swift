import Foundation
import Testing

@testable import OutboxModel
@testable import OutboxStorage

/// The change feed as the one observation channel: which entries changed,
/// and the dispatcher's events, through one subscriber registry.
@Suite("Change feed")
struct ChangeFeedTests {
    @Test("each publisher's streams get its own events, and finishing one ends only its streams")
    func eventsArePerPublisher() async {
        let feed = OutboxChangeFeed()
        let first = feed.eventPublisher()
        let second = feed.eventPublisher()
        let firstStream = first.stream()
        let secondStream = second.stream()
        let a = OutboxEntryID()
        let b = OutboxEntryID()
        first.publish(.sending(a, attempt: 1))
        second.publish(.sending(b, attempt: 2))
        first.finish()
        second.publish(.delivered(b, serverID: "srv-b"))
        second.finish()
        var seenFirst: [OutboxEvent] = []
        for await event in firstStream { seenFirst.append(event) }
        var seenSecond: [OutboxEvent] = []
        for await event in secondStream { seenSecond.append(event) }
        #expect(seenFirst == [.sending(a, attempt: 1)])
        #expect(seenSecond == [.sending(b, attempt: 2), .delivered(b, serverID: "srv-b")])
    }

    @Test("an event is not even built when nobody listens")
    func unobservedEventsCostNothing() {
        let feed = OutboxChangeFeed(eventsAreChanges: true)
        let publisher = feed.eventPublisher()
        var built = 0
        func event() -> OutboxEvent {
            built += 1
            return .sending(OutboxEntryID(), attempt: 1)
        }
        publisher.publish(event())
        #expect(built == 0)
        let stream = publisher.stream()
        publisher.publish(event())
        #expect(built == 1)
        _ = stream
    }

    @Test("a store's feed is woken by the store's announcements, not by events; a dispatcher's own feed by both")
    func eventsWakeChangeObserversOnlyWithoutAStore() async throws {
        for eventsAreChanges in [false, true] {
            let feed = OutboxChangeFeed(eventsAreChanges: eventsAreChanges)
            let id = OutboxEntryID()
            let changes = feed.subscribe(to: [id])
            let everything = feed.subscribe()
            feed.eventPublisher().publish(.sending(id, attempt: 1))
            feed.publishQueueChange()  // something to read either way
            let woken = try #require(await everything.next())
            #expect(woken == (eventsAreChanges ? [id] : []), "eventsAreChanges: \(eventsAreChanges)")
            feed.publish([id])
            #expect(await changes.next() == [id])
        }
    }
}
