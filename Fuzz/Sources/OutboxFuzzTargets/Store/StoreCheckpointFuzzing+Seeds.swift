import Outbox
import OutboxLog

extension StoreCheckpointFuzzing {
    /// Seed inputs from checkpoint files a store wrote (each with whether
    /// it is sealed): each file as is and with its CRCs repaired, and its
    /// plain body alone; and an empty body.
    package static func seeds(files: [(bytes: [UInt8], sealed: Bool)]) throws -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for (file, sealed) in files {
            let mode: UInt8 = sealed ? 1 : 0
            seeds.append([mode << 1] + file)
            seeds.append([mode << 1 | 1] + file)
            let body = try plainBody(of: file, format: format(sealed: sealed))
            seeds.append([(2 | mode) << 1] + littleEndian(body.nextSequence) + body.plain)
        }
        let empty = StoreCheckpointBody.encode(
            Scheduler(partition: partition, configuration: OutboxStoreConfiguration()).checkpointContent, format: format(sealed: false))
        seeds.append([2 << 1] + littleEndian(UInt64(1)) + empty)
        return seeds
    }

    /// The next sequence number and the plain body of a checkpoint file.
    static func plainBody(of file: [UInt8], format: RecordFormat) throws -> (nextSequence: UInt64, plain: [UInt8]) {
        let headerSize = Int(file.withUnsafeBytes { $0.loadLittleEndian(at: 12, as: UInt32.self) })
        let header = try StoreCheckpoint.decodeHeader(Array(file[..<headerSize]))
        let stored = Array(file[headerSize...])
        guard let sealer = format.sealer else { return (header.nextSequence, stored) }
        return (header.nextSequence, try sealer.open(stored, .checkpoint, partition: format.partition, binding: header.position.encoded()))
    }

    static func littleEndian(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
}
