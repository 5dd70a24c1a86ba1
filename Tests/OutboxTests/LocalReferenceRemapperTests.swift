import Foundation
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

@Suite("Local reference remapping")
struct LocalReferenceRemapperTests {
    let parent = OutboxEntryID()

    @Test("payloads and endpoints without a reference are returned untouched, without parsing")
    func noReference() {
        let payload = Array(#"{"text": "local news", "n": 1.50}"#.utf8)
        #expect(!LocalReferenceRemapper.mayContainReferences(endpoint: "/messages", payload: payload))
        #expect(LocalReferenceRemapper.references(endpoint: "/messages", payload: payload).isEmpty)
        let remapped = LocalReferenceRemapper.remap(endpoint: "/messages", payload: payload) { _ in "x" }
        #expect(remapped.endpoint == "/messages")
        #expect(remapped.payload == payload)
    }

    @Test("a reference spelled with JSON escapes is still found and replaced")
    func escapedReference() {
        // "local:" with its "l" escaped: no literal "local:" in the bytes.
        let escaped = "\\u006cocal:" + parent.description
        let payload = Array(#"{"album": "\#(escaped)"}"#.utf8)
        #expect(LocalReferenceRemapper.mayContainReferences(endpoint: "/photos", payload: payload))
        #expect(LocalReferenceRemapper.references(endpoint: "/photos", payload: payload) == [parent])
        let remapped = LocalReferenceRemapper.remap(endpoint: "/photos", payload: payload) { $0 == parent ? "77" : nil }
        #expect(String(decoding: remapped.payload, as: UTF8.self) == #"{"album": "77"}"#)
    }

    @Test("a reference in the endpoint alone is found")
    func endpointOnly() {
        let endpoint = "/albums/\(parent.localReference)/photos"
        #expect(LocalReferenceRemapper.references(endpoint: endpoint, payload: []) == [parent])
        #expect(LocalReferenceRemapper.remap(endpoint: endpoint, payload: []) { _ in "9" }.endpoint == "/albums/9/photos")
    }
}
