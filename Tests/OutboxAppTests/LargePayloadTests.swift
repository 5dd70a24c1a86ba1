import Foundation
import Outbox
import Testing

/// A photo: its bytes are its payload.
struct UploadPhoto: OutboxAction {
    static let type = "upload"
    var album = "alb-1"
    var bytes: [UInt8]
    var method: String { "POST" }
    var endpoint: String { "/albums/\(album)/uploads" }
    func payload() throws -> [UInt8] { bytes }
}

/// Bytes a test can tell apart, cheaply: a pattern seeded by `seed`.
func photoBytes(_ count: Int, seed: UInt8) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    var state = UInt32(seed) &* 2_654_435_761 | 1
    for index in bytes.indices {
        state ^= state << 13
        state ^= state >> 17
        state ^= state << 5
        bytes[index] = UInt8(truncatingIfNeeded: state)
    }
    return bytes
}

/// A queue's directory under `root` (one user per root in these tests).
func queueDirectory(_ root: URL) throws -> URL {
    let partitions = root.appendingPathComponent("partitions")
    let names = try FileManager.default.contentsOfDirectory(atPath: partitions.path).filter { $0.hasPrefix("outbox+") }
    return partitions.appendingPathComponent(try #require(names.first))
}

func payloadFiles(_ root: URL) throws -> [String] {
    let directory = try queueDirectory(root).appendingPathComponent("payloads")
    return ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
}

func permissions(_ url: URL) throws -> Int {
    try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int)
}

/// Bodies above `largePayloadThreshold` go to a file beside
/// the log — written and synced before their entry, deleted when it ends,
/// sealed with the store, and never sent with another body.
@Suite("Large payloads", .timeLimit(.minutes(5)))
struct LargePayloadTests {
    static func configuration(threshold: Int = 4096, key: [UInt8]? = nil) throws -> OutboxStoreConfiguration {
        var configuration = quietStoreConfiguration()
        configuration.largePayloadThreshold = threshold
        if let key { try configuration.setEncryptionKey(key) }
        return configuration
    }

    /// Opens the queue of `user` under `root`.
    static func open(_ root: URL, _ configuration: OutboxStoreConfiguration) async throws(OutboxError) -> LogOutboxStore {
        try await LogOutboxStore.open(root: root, partition: "user", configuration: configuration)
    }

    /// A photo upload of `count` bytes (``photoBytes(_:seed:)``).
    static func photo(_ count: Int, seed: UInt8) throws -> OutboxEnqueueRequest {
        try OutboxEnqueueRequest(UploadPhoto(bytes: photoBytes(count, seed: seed)))
    }

    static func temporaryRoot() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("outbox-large-\(UUID().uuidString)")
    }

    @Test("a body above the threshold is kept in a 0600 file, read back whole, and deleted once its entry is delivered")
    func plainFileLifecycle() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try await Self.open(root, try Self.configuration())
        let photo = photoBytes(300_000, seed: 1)
        let small = try await store.enqueue(OutboxEnqueueRequest(UploadPhoto(bytes: [1, 2, 3])))
        guard case .enqueued(let entry) = try await store.enqueue(OutboxEnqueueRequest(UploadPhoto(bytes: photo))) else {
            Issue.record("not enqueued")
            return
        }
        #expect(entry.payload.isEmpty)
        let large = try #require(entry.largePayload)
        #expect(large.count == photo.count)
        #expect(try await entry.loadPayload() == photo)
        #expect(try await store.entry(small.id)?.largePayload == nil)
        // The file holds exactly the body, and nobody else can read it.
        let file = try #require(large.plainFile)
        #expect(FileManager.default.contents(atPath: file.string) == Data(photo))
        #expect(try permissions(URL(fileURLWithPath: file.string)) == 0o600)
        #expect(try permissions(try queueDirectory(root).appendingPathComponent("payloads")) == 0o700)
        let pendingBytes = try await store.summary().bytes[.pending] ?? 0
        #expect(pendingBytes > photo.count)

        // Delivered through the dispatcher: the handler reads the body; then the file goes.
        let received = ReceivedBodies()
        let dispatcher = OutboxDispatcher(
            store: store,
            handlers: [UploadPhoto.type: ClosureOutboxHandler { delivery in
                await received.add(try await delivery.loadPayload())
                return .delivered(serverID: "ph-1")
            }], configuration: Self.quietDispatcher())
        await dispatcher.start()
        #expect(try await dispatcher.waitUntilDelivered(entry.id) == "ph-1")
        #expect(await received.bodies.contains(photo))
        _ = try await dispatcher.waitUntilDelivered(small.id)
        await store.payloadFileDeletionsSettled()
        #expect(try payloadFiles(root).isEmpty)
        await dispatcher.stop()
        try await store.close()
    }

    @Test("with encryption the file is sealed: no plain bytes on disk, no plain file to upload, the same body back")
    func sealedFile() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let configuration = try Self.configuration(key: Array(repeating: 7, count: 32))
        let photo = Array(String(repeating: "secret photo caption ", count: 20_000).utf8)
        var store = try await Self.open(root, configuration)
        let id = try await store.enqueue(OutboxEnqueueRequest(UploadPhoto(bytes: photo))).id
        try await store.close()
        let files = try payloadFiles(root)
        #expect(files.count == 1)
        let sealed = try Data(contentsOf: try queueDirectory(root).appendingPathComponent("payloads/\(files[0])"))
        #expect(sealed.count > photo.count)
        #expect(sealed.range(of: Data("secret photo".utf8)) == nil)
        store = try await Self.open(root, configuration)
        let large = try #require(try await store.entry(id)?.largePayload)
        #expect(large.plainFile == nil)
        #expect(try await large.bytes() == photo)
        var reader = large.makeChunkReader(chunkBytes: 100_000)
        var streamed: [UInt8] = []
        while let chunk = try await reader.next() { streamed += chunk }
        #expect(streamed == photo)
        try await store.close()
    }

    @Test("re-keying a queue re-seals its payload files: the new key reads the same body, the old files are gone")
    func rekeyCarriesPayloadFiles() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let oldKey = Array(repeating: UInt8(7), count: 32), newKey = Array(repeating: UInt8(9), count: 32)
        let configuration = try Self.configuration(key: oldKey)
        let photo = Array(String(repeating: "rekeyed photo caption ", count: 20_000).utf8)
        var store = try await Self.open(root, configuration)
        let id = try await store.enqueue(OutboxEnqueueRequest(UploadPhoto(bytes: photo))).id
        try await store.close()
        let before = try payloadFiles(root)
        #expect(before.count == 1)

        try await LogOutboxStore.rekey(root: root, partition: "user", configuration: configuration, newKey: newKey)
        let renewed = try Self.configuration(key: newKey)
        store = try await Self.open(root, renewed)
        let large = try #require(try await store.entry(id)?.largePayload)
        #expect(try await large.bytes() == photo)
        let after = try payloadFiles(root)
        #expect(after.count == 1)
        let sealed = try Data(contentsOf: try queueDirectory(root).appendingPathComponent("payloads/\(after[0])"))
        #expect(sealed.range(of: Data("rekeyed photo".utf8)) == nil)
        try await store.close()
        // The old key opens nothing any more.
        await #expect(throws: OutboxError.self) {
            _ = try await Self.open(root, configuration)
        }
    }

    @Test("a file leaves with its entry: discarded, replaced by coalescing, refused, a duplicate — and purge takes the rest")
    func filesEndWithTheirEntries() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        var configuration = try Self.configuration()
        configuration.maximumBytes = 2_000_000
        let store = try await Self.open(root, configuration)
        let first = try await store.enqueue(Self.photo(50_000, seed: 2))
        #expect(try payloadFiles(root).count == 1)
        _ = try await store.discard(first.id)
        await store.payloadFileDeletionsSettled()
        #expect(try payloadFiles(root).isEmpty)

        var cover = OutboxEnqueueRequest(type: "cover", method: "PUT", endpoint: "/albums/a/cover", payload: photoBytes(50_000, seed: 3))
        cover.coalescingKey = "cover:a"
        _ = try await store.enqueue(cover)
        var newer = cover
        newer.id = OutboxEntry.ID()
        newer.payload = photoBytes(60_000, seed: 4)
        guard case .coalesced(let kept, _) = try await store.enqueue(newer) else {
            Issue.record("not coalesced")
            return
        }
        await store.payloadFileDeletionsSettled()
        #expect(try payloadFiles(root) == [try #require(kept.largePayload?.plainFile?.lastComponent?.string)])

        // A duplicate of the same id writes no second file; a refusal leaves none.
        #expect(try await store.enqueue(newer) == .duplicate(newer.id, status: .pending))
        await #expect(throws: OutboxError.self) {
            try await store.enqueue(Self.photo(3_000_000, seed: 5))
        }
        #expect(try payloadFiles(root).count == 1)
        try await store.close()
        try await LogOutboxStore.purge(root: root, partition: "user")
        let partitions = root.appendingPathComponent("partitions").path
        let left = FileManager.default.fileExists(atPath: partitions)
            ? try FileManager.default.contentsOfDirectory(atPath: partitions).filter { $0.hasPrefix("outbox+") } : []
        #expect(left.isEmpty)
    }

    @Test("a directory in payloads/ is moved aside and reported, never deleted and never fatal to the open")
    func strayDirectoryInPayloads() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let configuration = try Self.configuration()
        var store = try await Self.open(root, configuration)
        let kept = try await store.enqueue(Self.photo(10_000, seed: 8)).id
        try await store.close()
        let queue = try queueDirectory(root)
        let stray = queue.appendingPathComponent("payloads").appendingPathComponent("backup")
        try FileManager.default.createDirectory(at: stray, withIntermediateDirectories: false)
        try Data("keep me".utf8).write(to: stray.appendingPathComponent("note"))

        store = try await Self.open(root, configuration)
        #expect(store.payloadRecovery.movedAside == ["backup"])
        #expect(store.payloadRecovery.removedOrphans.isEmpty)
        let aside = queue.appendingPathComponent("damaged").appendingPathComponent("payloads+backup").appendingPathComponent("note")
        #expect(FileManager.default.contents(atPath: aside.path) == Data("keep me".utf8))
        #expect(try await store.entry(kept)?.largePayload?.bytes() == photoBytes(10_000, seed: 8))
        _ = try await store.enqueue(Self.photo(10_000, seed: 9))
        try await store.close()
    }

    @Test("at open, a file no entry references is removed; an entry whose file is missing is quarantined, never sent")
    func recoveryAtOpen() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let configuration = try Self.configuration()
        var store = try await Self.open(root, configuration)
        let lost = try await store.enqueue(Self.photo(10_000, seed: 6)).id
        let kept = try await store.enqueue(Self.photo(10_000, seed: 7)).id
        let lostFile = try #require(try await store.entry(lost)?.largePayload?.plainFile)
        let keptFile = try #require(try await store.entry(kept)?.largePayload?.plainFile?.lastComponent?.string)
        try await store.close()
        let payloads = try queueDirectory(root).appendingPathComponent("payloads")
        try FileManager.default.removeItem(atPath: lostFile.string)
        // What a kill between a file's sync and its entry's append leaves:
        // a file whose entry was never recorded, and a second file of a
        // recorded entry (an enqueue of the same id that lost the race);
        // and a name of no file the store writes (renamed by hand).
        let unrecorded = String(repeating: "ab", count: 16) + "-" + String(repeating: "01", count: 16)
        let second = String(keptFile.prefix(32)) + "-" + String(repeating: "02", count: 16)
        let foreign = "notes.txt"
        for name in [unrecorded, second, foreign] { try Data([1, 2, 3]).write(to: payloads.appendingPathComponent(name)) }

        store = try await Self.open(root, configuration)
        #expect(store.payloadRecovery.removedOrphans == [foreign, second, unrecorded].sorted())
        #expect(try payloadFiles(root) == [keptFile])
        let sent = ReceivedBodies()
        let dispatcher = OutboxDispatcher(
            store: store,
            handlers: [UploadPhoto.type: ClosureOutboxHandler { delivery in
                await sent.add(try await delivery.loadPayload())
                return .delivered(serverID: nil)
            }], configuration: Self.quietDispatcher())
        await dispatcher.start()
        _ = try await dispatcher.waitUntilDelivered(kept)
        do {
            _ = try await dispatcher.waitUntilDelivered(lost)
            Issue.record("an entry whose payload file is missing was delivered")
        } catch let failure as OutboxDeliveryFailure {
            #expect(failure.kind == .quarantined)
            #expect(failure.failure?.cause == .payloadFileDamaged, "\(failure)")
            #expect(failure.failure?.message?.contains("missing") == true, "\(failure)")
        }
        #expect(try await store.entry(lost)?.status == .quarantined)
        #expect(await sent.bodies == [photoBytes(10_000, seed: 7)])
        await dispatcher.stop()
        try await store.close()
    }

    @Test("a damaged file — a flipped bit, cut short, another entry's — is quarantined with a typed reason, never sent")
    func damagedFilesAreQuarantined() async throws {
        for key in [nil, Array(repeating: UInt8(9), count: 32)] {
            for damage in ["flip", "cut", "swap"] {
                try await Self.checkDamage(damage, key: key)
            }
        }
    }

    static func checkDamage(_ damage: String, key: [UInt8]?) async throws {
        let root = temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let configuration = try configuration(key: key)
        var store = try await Self.open(root, configuration)
        let victim = try await store.enqueue(Self.photo(200_000, seed: 8)).id
        // Same size, so a swap is not caught by the size alone.
        _ = try await store.enqueue(Self.photo(200_000, seed: 9))
        try await store.close()
        let directory = try queueDirectory(root).appendingPathComponent("payloads")
        let names = try payloadFiles(root)
        store = try await Self.open(root, configuration)
        let target = try await Self.fileName(of: victim, in: store, among: names, directory: directory)
        try await store.close()
        let path = directory.appendingPathComponent(target)
        var bytes = try Data(contentsOf: path)
        switch damage {
        case "flip": bytes[bytes.count / 2] ^= 0x10
        case "cut": bytes = bytes.prefix(bytes.count - 1000) + Data(repeating: 0, count: 1000)
        default: bytes = try Data(contentsOf: directory.appendingPathComponent(try #require(names.first { $0 != target })))
        }
        try bytes.write(to: path)

        store = try await Self.open(root, configuration)
        let sent = ReceivedBodies()
        let dispatcher = OutboxDispatcher(
            store: store,
            handlers: [UploadPhoto.type: ClosureOutboxHandler { delivery in
                await sent.add(try await delivery.loadPayload())
                return .delivered(serverID: nil)
            }], configuration: quietDispatcher())
        await dispatcher.start()
        do {
            _ = try await dispatcher.waitUntilDelivered(victim)
            Issue.record("\(damage), key \(key != nil): a damaged payload was delivered")
        } catch let failure as OutboxDeliveryFailure {
            #expect(failure.kind == .quarantined)
            #expect(failure.failure?.cause == .payloadFileDamaged, "\(damage): \(failure)")
        }
        #expect(try await store.entry(victim)?.status == .quarantined)
        #expect(await !sent.bodies.contains(photoBytes(200_000, seed: 8)))
        // Whatever was handed out is exactly an enqueued body.
        for body in await sent.bodies { #expect(body == photoBytes(200_000, seed: 9)) }
        await dispatcher.stop()
        try await store.close()
    }

    /// The name of `id`'s payload file.
    static func fileName(of id: OutboxEntry.ID, in store: LogOutboxStore, among names: [String], directory: URL) async throws -> String {
        let large = try #require(try await store.entry(id)?.largePayload)
        if let file = large.plainFile { return try #require(file.lastComponent?.string) }
        // A sealed file has no plain path: the one that leaves the entry unreadable when moved away is its.
        for name in names {
            let path = directory.appendingPathComponent(name)
            let aside = directory.appendingPathComponent(name + ".aside")
            try FileManager.default.moveItem(at: path, to: aside)
            defer { try? FileManager.default.moveItem(at: aside, to: path) }
            do { _ = try await large.bytes() } catch { return name }
        }
        Issue.record("no file is the entry's")
        return names[0]
    }

    @Test("the in-memory store accepts the same sizes, keeping the body in memory")
    func inMemoryStoreKeepsLargeBodies() async throws {
        var configuration = quietStoreConfiguration()
        configuration.log.maximumRecordSize = 1 << 20
        let store = InMemoryOutboxStore(partition: "user", configuration: configuration)
        let photo = photoBytes(3 << 20, seed: 10)
        let entry = try #require(try await store.entry(try await store.enqueue(OutboxEnqueueRequest(UploadPhoto(bytes: photo))).id))
        #expect(entry.largePayload == nil)
        #expect(try await entry.loadPayload() == photo)
        configuration.largePayloadThreshold = nil
        await #expect(throws: OutboxError.self) {
            try await InMemoryOutboxStore(partition: "user", configuration: configuration)
                .enqueue(OutboxEnqueueRequest(UploadPhoto(bytes: photo)))
        }
    }

    @Test("a body kept in a file cannot carry a local: reference (it would be sent unreplaced): refused, nothing written, in both stores")
    func localReferencesStayInline() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let logStore = try await Self.open(root, try Self.configuration())
        let memoryStore = InMemoryOutboxStore(partition: "user", configuration: try Self.configuration())
        for store in [logStore, memoryStore] as [any OutboxStore] {
            let album = try await store.enqueue(OutboxEnqueueRequest(type: "album", method: "POST", endpoint: "/albums")).id
            let filler = String(repeating: "x", count: 8192)
            let json = #"{"album":"\#(album.localReference)","notes":"\#(filler)"}"#
            let request = OutboxEnqueueRequest(
                type: "caption", method: "POST", endpoint: "/captions", payload: Array(json.utf8), dependencies: [album])
            let refusal = await #expect(throws: OutboxError.self, "\(type(of: store))") { try await store.enqueue(request) }
            #expect(refusal?.code == .invalidArgument)
            #expect(refusal?.description.contains(album.localReference) == true, "\(String(describing: refusal))")
            #expect(refusal?.description.contains("largePayloadThreshold") == true, "\(String(describing: refusal))")
            #expect(try await store.summary().unsent == 1, "only the album")
            // Text that merely mentions one is not a reference, and is accepted.
            let mention = #"{"notes":"see \#(album.localReference) \#(filler)"}"#
            _ = try await store.enqueue(
                OutboxEnqueueRequest(type: "note", method: "POST", endpoint: "/notes", payload: Array(mention.utf8)))
        }
        #expect(try payloadFiles(root).count == 1, "the note's file only")
        try await logStore.close()
    }

    static func quietDispatcher() -> OutboxDispatcherConfiguration {
        var configuration = OutboxDispatcherConfiguration()
        configuration.logger = quietLogger()
        return configuration
    }
}

/// Bodies a handler received.
actor ReceivedBodies {
    private(set) var bodies: [[UInt8]] = []
    func add(_ body: [UInt8]) { bodies.append(body) }
}
