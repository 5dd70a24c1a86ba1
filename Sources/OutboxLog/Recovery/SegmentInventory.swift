import Logging
import SystemPackage

/// A segment file found on disk, open for reading, with its decoded header.
struct SegmentCandidate {
    var base: UInt64
    var path: FilePath
    var descriptor: FileDescriptor
    var size: Int64
    var header: Result<SegmentHeader, SegmentHeader.DecodeError>

    var name: String { path.lastComponent?.string ?? path.string }

    /// The header, if it verified and names the base the file name says.
    var usableHeader: SegmentHeader? {
        if case .success(let header) = header, header.baseSequence == base { return header }
        return nil
    }

    /// The salt of a header that verified, whatever base it names.
    var salt: UInt64? { try? header.get().salt }
}

/// Recovery, step 1: what the log directory holds. Every segment and every
/// compaction output is opened and its header read *before anything is
/// modified*, so a newer format version fails the open untouched.
///
/// The inventory owns the descriptors it opened until ``handOver(_:)``
/// gives one to a ``SegmentFile``; ``close()`` closes the others.
final class SegmentInventory {
    private(set) var segments: [UInt64: SegmentCandidate] = [:]
    private(set) var compacting: [UInt64: SegmentCandidate] = [:]
    /// `.tmp` files: segments and intents that were being created.
    private(set) var temporaries: [String] = []
    /// Whether a committed swap's intent (`COMPACTION`) is present.
    private(set) var hasIntent = false
    private var owned: Set<CInt> = []
    private let fileSystem: any FileSystem

    init(layout: DirectoryLayout, fileSystem: any FileSystem, logger: Logger) throws(OutboxLogError) {
        self.fileSystem = fileSystem
        let names: [String]
        do { names = try fileSystem.contentsOfDirectory(layout.directory) } catch {
            throw .io("cannot list the log directory", error, file: layout.directory)
        }
        var segmentBases: [UInt64] = []
        var compactingBases: [UInt64] = []
        for name in names.sorted() {
            switch DirectoryLayout.classify(name) {
            case .segment(let base): segmentBases.append(base)
            case .compactingSegment(let base): compactingBases.append(base)
            case .temporarySegment, .temporaryIntent, .temporaryIndexCheckpoint: temporaries.append(name)
            case .intent: hasIntent = true
            case .lock, .damagedDirectory, .indexCheckpoint: break
            case .unknown: logger.debug("ignoring unknown file in log directory", metadata: ["file": "\(name)"])
            }
        }
        do {
            for base in segmentBases.sorted() { segments[base] = try open(layout.segmentFile(base: base), base: base) }
            for base in compactingBases.sorted() {
                compacting[base] = try open(layout.compactingSegmentFile(base: base), base: base)
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// A ``SegmentFile`` owns this descriptor now.
    func handOver(_ descriptor: FileDescriptor) {
        owned.remove(descriptor.rawValue)
    }

    /// Closes every descriptor not handed over. Idempotent.
    func close() {
        for descriptor in owned { try? fileSystem.close(FileDescriptor(rawValue: descriptor)) }
        owned.removeAll()
    }

    /// Every segment file present, by base, with its salt (`nil` if its
    /// header is unreadable), as ``SegmentSwap/finish(_:segmentSalts:)``
    /// wants them.
    var segmentSalts: [UInt64: UInt64?] {
        var salts: [UInt64: UInt64?] = [:]
        // updateValue, not a subscript: assigning a nil salt through the
        // subscript would remove the key, and the swap would then skip that
        // input instead of moving it aside.
        for (base, candidate) in segments { salts.updateValue(candidate.salt, forKey: base) }
        return salts
    }

    private func open(_ path: FilePath, base: UInt64) throws(OutboxLogError) -> SegmentCandidate {
        let descriptor: FileDescriptor
        do { descriptor = try fileSystem.openFile(path, mode: .readOnly) } catch {
            throw .io("cannot open segment", error, file: path)
        }
        owned.insert(descriptor.rawValue)
        let header: Result<SegmentHeader, SegmentHeader.DecodeError>
        let size: Int64
        do { (header, size) = try fileSystem.readSegmentHeader(descriptor) } catch {
            throw .io("cannot read segment header", error, file: path)
        }
        if case .failure(.unsupportedVersion(let version)) = header {
            throw OutboxLogError(
                .unsupportedFormat, "segment format version \(version) is newer than this library (1)",
                file: path, offset: 8)
        }
        return SegmentCandidate(base: base, path: path, descriptor: descriptor, size: size, header: header)
    }
}
