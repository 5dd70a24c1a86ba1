import Foundation
import OutboxLogTesting

extension SplitMix64 {
    /// A UUID made of the next 16 bytes, version bits and all: the workers'
    /// entry ids need only be fixed by the seed, the same in every life.
    mutating func nextUUID() -> UUID {
        let bytes = nextBytes(16)
        return UUID(uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
