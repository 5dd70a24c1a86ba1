import Testing

@testable import OutboxCollections

/// A mapped buffer is whole pages, zero-filled and writable, and a size no
/// mapping can have is an error, not a trap.
@Suite struct MappedBufferTests {
    @Test func mapsWholeZeroFilledPages() throws {
        let buffer = try MappedBuffer(byteCount: 5000)
        #expect(buffer.count == 8192)
        #expect(buffer.bytes.allSatisfy { $0 == 0 })
        buffer.bytes[8191] = 7
        #expect(buffer.bytes[8191] == 7)
    }

    @Test func emptyMapsNothing() throws {
        let buffer = try MappedBuffer(byteCount: 0)
        #expect(buffer.count == 0)
        #expect(buffer.bytes.baseAddress == nil)
    }

    @Test(arguments: [Int.max, Int.max - 4000, -1])
    func impossibleSizeThrows(byteCount: Int) {
        let failure = #expect(throws: MappedBuffer.Failure.self) { _ = try MappedBuffer(byteCount: byteCount) }
        #expect(failure?.errno == 12)  // ENOMEM
    }
}
