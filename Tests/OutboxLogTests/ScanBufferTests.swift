import SystemPackage
import Testing

@testable import OutboxLog

/// A scan's buffer is mapped whole pages, zero-filled and writable, and a
/// size no mapping can have is an error, not a trap.
@Suite struct ScanBufferTests {
    @Test func mapsWholeZeroFilledPages() throws {
        var buffer = try ScanBuffer(byteCount: 5000)
        #expect(buffer.count == 8192)
        #expect(buffer.bytes.allSatisfy { $0 == 0 })
        buffer.bytes[8191] = 7
        #expect(buffer.bytes[8191] == 7)
        buffer.release()
        #expect(buffer.count == 0)
        buffer.release()  // a second release unmaps nothing
    }

    @Test func emptyMapsNothing() throws {
        let buffer = try ScanBuffer(byteCount: 0)
        #expect(buffer.count == 0)
        #expect(buffer.bytes.baseAddress == nil)
    }

    @Test(arguments: [Int.max, Int.max - 4000, -1])
    func impossibleSizeThrows(byteCount: Int) {
        #expect(throws: Errno.noMemory) { _ = try ScanBuffer(byteCount: byteCount) }
    }
}
