import Foundation
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// A cascade's events say why each dependent was quarantined — its own
/// parent's failure, as its entry records — not the root's for all of them.
@Suite("Cascade events")
struct CascadeEventTests {
    @Test("a chain quarantined by a permanent answer: each dependent's event names its own parent, as its entry does")
    func eachDependentNamesItsParent() async throws {
        let fixture = DispatcherFixture()
        fixture.handler.script("root", .permanent(reason: "422 invalid", httpStatus: 422))
        let root = try await fixture.add("root")
        let child = try await fixture.add("child", dependencies: [root])
        let grandchild = try await fixture.add("grandchild", dependencies: [child])
        await fixture.dispatcher.flush()
        await fixture.events.wait { events in
            events.contains { if case .quarantined(grandchild, _) = $0 { true } else { false } }
        }
        for (dependent, parent) in [(child, root), (grandchild, child)] {
            let published = fixture.events.all.compactMap { event -> OutboxFailure? in
                if case .quarantined(dependent, let failure) = event { failure } else { nil }
            }
            let recorded = try #require(try await fixture.store.entry(dependent)?.lastFailure)
            #expect(recorded.cause == .dependency(.quarantined(parent)))
            #expect(published == [recorded])
        }
    }

    @Test("the store's cascade gives each quarantined dependent's cause")
    func storeCascadeReasons() async throws {
        let store = InMemoryOutboxStore(partition: "u", configuration: quietConfiguration())
        let root = try await store.add(request())
        let child = try await store.add(request(dependencies: [root]))
        let grandchild = try await store.add(request(dependencies: [child]))
        let cascade = try await store.quarantine(root, OutboxFailure(.permanent, message: "by hand"))
        #expect(Set(cascade.dependents) == [child, grandchild])
        #expect(cascade.causes[child] == .quarantined(root))
        #expect(cascade.causes[grandchild] == .quarantined(child))
    }
}
