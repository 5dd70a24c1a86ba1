import OutboxLogTesting

/// One way a log directory gets damaged, applied to an in-memory copy of
/// its files (name → bytes).
enum Damage: Sendable, Hashable, CustomStringConvertible {
    /// Random bit flips anywhere in a file (headers included).
    case bitFlips(file: String, flips: [BitFlip])
    /// The file cut at an offset.
    case truncation(file: String, at: Int)
    /// A 4 KiB page of zeros (a lost or never-written page).
    case zeroedPage(file: String, page: Int)
    /// Bytes appended at the end of a file: random, zeros, or a copy of a
    /// record from earlier in the same file (it verifies: same salt).
    case garbage(file: String, kind: GarbageKind, count: Int)
    /// A segment file deleted.
    case deletedSegment(file: String)
    /// A segment file copied under another segment name, its header
    /// rewritten to match (when `consistent`) or left as it was.
    case duplicatedSegment(file: String, as: String, consistent: Bool)
    /// A segment's header replaced by one from another log.
    case foreignHeader(file: String, from: String)
    /// The index checkpoint (`INDEX`) replaced by another log's.
    case foreignCheckpoint

    struct BitFlip: Sendable, Hashable {
        var offset: Int
        var bit: Int
    }

    enum GarbageKind: String, Sendable, Hashable {
        case random, zeros, replayedRecord
    }

    /// A short name for tallies.
    var kind: String {
        switch self {
        case .bitFlips: "bit flips"
        case .truncation: "truncation"
        case .zeroedPage: "zeroed page"
        case .garbage(_, let kind, _): "garbage (\(kind.rawValue))"
        case .deletedSegment: "deleted segment"
        case .duplicatedSegment(_, _, let consistent): consistent ? "duplicated segment (renamed header)" : "duplicated segment"
        case .foreignHeader: "foreign header"
        case .foreignCheckpoint: "foreign checkpoint"
        }
    }

    var description: String {
        switch self {
        case .bitFlips(let file, let flips):
            "\(flips.count) bit flip(s) in \(file) at \(flips.prefix(4).map { "\($0.offset).\($0.bit)" }.joined(separator: ", "))"
        case .truncation(let file, let at): "\(file) truncated to \(at) bytes"
        case .zeroedPage(let file, let page): "\(file) page \(page) (offset \(page * 4096)) zeroed"
        case .garbage(let file, let kind, let count): "\(count) bytes of \(kind.rawValue) garbage appended to \(file)"
        case .deletedSegment(let file): "\(file) deleted"
        case .duplicatedSegment(let file, let name, let consistent):
            "\(file) copied as \(name)\(consistent ? " with its header rewritten to match" : "")"
        case .foreignHeader(let file, let from): "header of \(file) replaced by the header of another log's \(from)"
        case .foreignCheckpoint: "INDEX replaced by another log's"
        }
    }

    /// Draws one damage for `files` (segments only; `foreign` is another
    /// log's files, for foreign headers).
    static func draw(files: [String: [UInt8]], foreign: [String: [UInt8]], _ random: inout SplitMix64) -> Damage? {
        let segments = files.keys.filter { SegmentBytes.base(ofName: $0) != nil }.sorted()
        guard !segments.isEmpty else { return nil }
        // The index checkpoint, one case in seven: an open must not trust it.
        if let checkpoint = files["INDEX"], random.next(below: 7) == 0 {
            switch random.next(below: 4) {
            case 0:
                let flips = (0..<(1 + random.next(below: 4))).map { _ in
                    BitFlip(offset: random.next(below: max(1, checkpoint.count)), bit: random.next(below: 8))
                }
                return .bitFlips(file: "INDEX", flips: flips)
            case 1: return .truncation(file: "INDEX", at: random.next(below: max(1, checkpoint.count)))
            case 2: return foreign["INDEX"] == nil ? .deletedSegment(file: "INDEX") : .foreignCheckpoint
            default: return .deletedSegment(file: "INDEX")
            }
        }
        // The newest segment is where a crash leaves its marks: favour it.
        let file = random.next(below: 3) == 0 ? segments.last! : segments[random.next(below: segments.count)]
        let size = files[file]!.count
        switch random.next(below: 100) {
        case 0..<26:
            let flips = (0..<(1 + random.next(below: random.nextBool(probability: 0.7) ? 1 : 8))).map { _ in
                BitFlip(offset: random.next(below: max(1, size)), bit: random.next(below: 8))
            }
            return .bitFlips(file: file, flips: flips)
        case 26..<42:
            return .truncation(file: file, at: random.next(below: max(1, size)))
        case 42..<52:
            return .zeroedPage(file: file, page: random.next(below: max(1, (size + 4095) / 4096)))
        case 52..<68:
            let kinds: [GarbageKind] = [.random, .zeros, .replayedRecord]
            return .garbage(file: file, kind: kinds[random.next(below: 3)], count: 1 + random.next(below: 5000))
        case 68..<78:
            return .deletedSegment(file: file)
        case 78..<89:
            let bases = segments.compactMap(SegmentBytes.base(ofName:))
            // Between two segments, or after the last one.
            let target = random.nextBool() && bases.count > 1
                ? bases[random.next(below: bases.count - 1)] + 1 : bases.last! + UInt64(1 + random.next(below: 50))
            let name = SegmentBytes.name(base: target)
            guard files[name] == nil else { return .deletedSegment(file: file) }
            return .duplicatedSegment(file: file, as: name, consistent: random.nextBool())
        default:
            let donors = foreign.keys.filter { SegmentBytes.base(ofName: $0) != nil }.sorted()
            guard !donors.isEmpty else { return .truncation(file: file, at: random.next(below: max(1, size))) }
            return .foreignHeader(file: file, from: donors[random.next(below: donors.count)])
        }
    }

    /// The file the damage is to, and the one it takes bytes from.
    private var files: (target: String?, donor: String?) {
        switch self {
        case .bitFlips(let file, _), .truncation(let file, _), .zeroedPage(let file, _), .garbage(let file, _, _),
            .deletedSegment(let file), .duplicatedSegment(let file, _, _):
            (file, nil)
        case .foreignHeader(let file, let from): (file, from)
        case .foreignCheckpoint: (nil, nil)
        }
    }

    /// Applies the damage to `files`; `random` supplies garbage bytes. A
    /// damage drawn for a file another damage has since removed (several
    /// are applied to one store's copy) is skipped.
    func apply(to files: inout [String: [UInt8]], foreign: [String: [UInt8]], _ random: inout SplitMix64) {
        if let target = self.files.target, files[target] == nil { return }
        if let donor = self.files.donor, foreign[donor] == nil { return }
        switch self {
        case .bitFlips(let file, let flips):
            for flip in flips where files[file]!.indices.contains(flip.offset) {
                files[file]![flip.offset] ^= UInt8(1) << UInt8(flip.bit)
            }
        case .truncation(let file, let at):
            files[file]!.removeSubrange(min(at, files[file]!.count)...)
        case .zeroedPage(let file, let page):
            let range = (page * 4096..<(page + 1) * 4096).clamped(to: files[file]!.indices)
            files[file]!.replaceSubrange(range, with: repeatElement(0, count: range.count))
        case .garbage(let file, let kind, let count):
            switch kind {
            case .random: files[file]! += random.nextBytes(count)
            case .zeros: files[file]! += [UInt8](repeating: 0, count: count)
            case .replayedRecord:
                let frames = SegmentBytes.frames(in: files[file]!)
                if let frame = frames.isEmpty ? nil : frames[random.next(below: frames.count)] {
                    files[file]! += Array(files[file]![frame])
                } else {
                    files[file]! += random.nextBytes(count)
                }
            }
        case .deletedSegment(let file):
            files[file] = nil
        case .duplicatedSegment(let file, let name, let consistent):
            var copy = files[file]!
            if consistent, let base = SegmentBytes.base(ofName: name) { SegmentBytes.setBase(base, in: &copy) }
            files[name] = copy
        case .foreignHeader(let file, let from):
            let header = foreign[from]!.prefix(SegmentBytes.headerSize)
            files[file]!.replaceSubrange(0..<min(header.count, files[file]!.count), with: header)
        case .foreignCheckpoint:
            files["INDEX"] = foreign["INDEX"]
        }
    }
}
