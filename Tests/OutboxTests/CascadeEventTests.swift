import Foundation
import Testing

@testable import Outbox

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
            let reasons = fixture.events.all.compactMap { event -> String? in
                if case .quarantined(dependent, let reason) = event { reason } else { nil }
            }
            let recorded = try #require(try await fixture.store.entry(dependent)?.lastError)
            #expect(recorded.hasPrefix("dependencyFailed: \(parent) "))
            #expect(reasons == [recorded])
        }
    }

    @Test("the store's cascade gives each quarantined dependent's reason")
    func storeCascadeReasons() async throws {
        let store = InMemoryOutboxStore(partition: "u", configuration: quietConfiguration())
        let root = try await store.add(request())
        let child = try await store.add(request(dependencies: [root]))
        let grandchild = try await store.add(request(dependencies: [child]))
        let cascade = try await store.quarantine(root, reason: "by hand", httpStatus: nil)
        #expect(Set(cascade.dependents) == [child, grandchild])
        #expect(cascade.reasons[child] == DependencyFailure.quarantined(root).reason)
        #expect(cascade.reasons[grandchild] == DependencyFailure.quarantined(child).reason)
    }
}
