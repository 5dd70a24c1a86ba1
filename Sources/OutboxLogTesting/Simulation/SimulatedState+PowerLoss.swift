import SystemPackage

extension SimulatedState {
    /// Rebuilds every directory and file from its durable image plus the
    /// unsynced operations `mode` lets through, after closing everything as
    /// the machine's death does. See ``PowerLossMode`` for each mode.
    mutating func losePower(mode: PowerLossMode, seed: UInt64) -> PowerLossReport {
        let descriptorsClosed = descriptors.count
        closeEverything()

        // Names for the report, taken before the namespace changes.
        let visiblePaths = paths(durable: false)
        let durablePaths = paths(durable: true)
        func name(of id: NodeID) -> FilePath? { visiblePaths[id] ?? durablePaths[id] }

        // 1. Directories: durable entries + a prefix of the unsynced changes.
        //    Sorted iteration and one generator per node keep the outcome
        //    independent of dictionary order (which Swift randomizes per
        //    process) and of unrelated files.
        var entryChanges: [NodeID: (unsynced: Int, landed: Int)] = [:]
        for id in directories.keys.sorted() {
            var random = SplitMix64.derived(seed: seed, stream: id)
            let unsynced = directories[id]!.unsynced
            let kept = mode == .dropUnsynced ? 0 : random.next(in: 0...unsynced.count)
            var entries = directories[id]!.durableEntries
            for operation in unsynced.prefix(kept) { operation.apply(to: &entries) }
            directories[id]!.reset(to: entries)
            entryChanges[id] = (unsynced.count, kept)
        }

        // 2. Which nodes a name still reaches decides what exists.
        let reachable = Set(paths(durable: true).keys)

        // 3. Files: durable image + whatever the mode lets through.
        var fileOutcomes: [PowerLossReport.FileOutcome] = []
        for id in files.keys.sorted() {
            let before = files[id]!
            let exists = reachable.contains(id)
            var plan = FileReplay()
            if exists {
                var random = SplitMix64.derived(seed: seed, stream: id)
                var image = before.durable
                plan = FileReplay.run(before.unsynced, onto: &image, mode: mode, random: &random)
                files[id]!.reset(to: image)
            }
            fileOutcomes.append(
                PowerLossReport.FileOutcome(
                    path: name(of: id), existsAfterward: exists, sizeBefore: before.visible.count,
                    sizeAfter: exists ? files[id]!.visible.count : nil, unsyncedOperations: before.unsynced.count,
                    landedOperations: plan.landed, tornWrite: plan.tornWrite, garbageTail: plan.garbageTail,
                    droppedByFailedSync: before.droppedByFailedSync))
        }

        var directoryOutcomes: [PowerLossReport.DirectoryOutcome] = []
        for id in directories.keys.sorted() where id != Self.rootID {
            let changes = entryChanges[id]!
            directoryOutcomes.append(
                PowerLossReport.DirectoryOutcome(
                    path: name(of: id), existsAfterward: reachable.contains(id),
                    unsyncedOperations: changes.unsynced, landedOperations: changes.landed))
        }

        collectGarbage()
        // Unnamed nodes sort last; "\u{10FFFF}" sorts after any real path.
        return PowerLossReport(
            mode: mode, seed: seed,
            files: fileOutcomes.sorted { ($0.path?.string ?? "\u{10FFFF}") < ($1.path?.string ?? "\u{10FFFF}") },
            directories: directoryOutcomes.sorted {
                ($0.path?.string ?? "\u{10FFFF}") < ($1.path?.string ?? "\u{10FFFF}")
            },
            descriptorsClosed: descriptorsClosed)
    }
}

/// Which of one file's unsynced operations land in a power loss, and how.
struct FileReplay {
    /// The sector size at which ``PowerLossMode/tearLastWrite`` tears
    /// writes: drives promise (at best) that one 512-byte sector is written
    /// atomically, nothing larger.
    static let sectorSize = 512

    var landed: [Int] = []
    var tornWrite: PowerLossReport.TornWrite?
    var garbageTail: PowerLossReport.GarbageTail?

    /// Applies to `image` (the durable bytes) the unsynced `operations` that
    /// `mode` lets through, drawing every choice from `random`.
    static func run(
        _ operations: [DataOperation], onto image: inout [UInt8], mode: PowerLossMode, random: inout SplitMix64
    ) -> FileReplay {
        var replay = FileReplay()
        func land(_ index: Int) {
            operations[index].apply(to: &image)
            replay.landed.append(index)
        }
        switch mode {
        case .dropUnsynced:
            break

        case .keepRandomPrefix:
            for index in 0..<random.next(in: 0...operations.count) { land(index) }

        case .reorder:
            for index in operations.indices where random.nextBool() { land(index) }

        case .tearLastWrite:
            guard !operations.isEmpty else { break }
            let kept = random.next(in: 1...operations.count)
            let torn = operations.prefix(kept).lastIndex { if case .write = $0 { true } else { false } }
            for index in 0..<kept {
                if index == torn, case .write(let offset, let bytes) = operations[index] {
                    let length = tornLength(offset: offset, count: bytes.count, random: &random)
                    DataOperation.write(offset: offset, bytes: Array(bytes.prefix(length))).apply(to: &image)
                    replay.landed.append(index)
                    if length < bytes.count {
                        replay.tornWrite = PowerLossReport.TornWrite(
                            operationIndex: index, offset: offset, bytesLanded: length, bytesIntended: bytes.count)
                    }
                } else {
                    land(index)
                }
            }

        case .garbageTail:
            // The writes that would grow the file, given the ones before them.
            var size = image.count
            var extending: [Int] = []
            for (index, operation) in operations.enumerated() {
                if case .write(let offset, let bytes) = operation, !bytes.isEmpty, offset + bytes.count > size {
                    extending.append(index)
                }
                size = operation.size(after: size)
            }
            guard !extending.isEmpty else {
                for index in 0..<random.next(in: 0...operations.count) { land(index) }
                break
            }
            let chosen = extending[random.next(below: extending.count)]
            for index in 0..<chosen { land(index) }
            guard case .write(let offset, let bytes) = operations[chosen] else { preconditionFailure() }
            let range = image.count..<(offset + bytes.count)
            let isZeros = random.nextBool()
            image.append(contentsOf: isZeros ? Array(repeating: 0, count: range.count) : random.nextBytes(range.count))
            replay.garbageTail = PowerLossReport.GarbageTail(operationIndex: chosen, range: range, isZeros: isZeros)
        }
        return replay
    }

    /// How many leading bytes of a write at `offset` land when it is torn at
    /// a random sector boundary strictly inside it; all of them if it lies
    /// within one sector.
    static func tornLength(offset: Int, count: Int, random: inout SplitMix64) -> Int {
        let end = offset + count
        let firstBoundary = (offset / sectorSize + 1) * sectorSize
        guard firstBoundary < end else { return count }
        let boundaries = (end - 1 - firstBoundary) / sectorSize + 1
        return firstBoundary + sectorSize * random.next(below: boundaries) - offset
    }
}
