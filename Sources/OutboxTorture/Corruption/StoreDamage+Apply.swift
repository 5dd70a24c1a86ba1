import Outbox
import OutboxLogTesting

extension StoreDamage {
    /// Applies the damage to `tree` (a copy of `base`), noting in
    /// `expectations` what it allows and requires; `random` supplies bytes.
    func apply(to tree: inout FileTree, base: StoreBase, expectations: inout StoreExpectations, _ random: inout SplitMix64) {
        switch self {
        case .checkpointFlips, .checkpointValue, .checkpointTruncated, .checkpointReplaced:
            applyToCheckpoint(&tree, base: base)
        case .spoolSegment, .spoolName, .spoolsStray, .forgedSpool:
            applyToSpools(&tree, base: base, expectations: &expectations, &random)
        case .payloadStrayDirectory, .payloadForeignFile, .payloadCut, .payloadFlipped:
            applyToPayloads(&tree, base: base, expectations: &expectations, &random)
        }
    }

    /// A damage of the checkpoint file.
    private func applyToCheckpoint(_ tree: inout FileTree, base: StoreBase) {
        let checkpoint = base.checkpointPath
        switch self {
        case .checkpointFlips(let flips, _, let repaired):
            guard var bytes = tree.files[checkpoint] else { return }
            let header = CheckpointBytes.headerSize(bytes)
            for flip in flips where bytes.indices.contains(flip.offset) { bytes[flip.offset] ^= UInt8(1) << UInt8(flip.bit) }
            if repaired { CheckpointBytes.repairCRCs(&bytes, headerSize: header) }
            tree.files[checkpoint] = bytes
        case .checkpointValue(let field, let value, _):
            guard var bytes = tree.files[checkpoint] else { return }
            let header = CheckpointBytes.headerSize(bytes)
            CheckpointBytes.write(value, field, in: &bytes)
            CheckpointBytes.repairCRCs(&bytes, headerSize: header)
            tree.files[checkpoint] = bytes
        case .checkpointTruncated(let at):
            guard let bytes = tree.files[checkpoint] else { return }
            tree.files[checkpoint] = Array(bytes.prefix(at))
        case .checkpointReplaced(let kind):
            tree.files[checkpoint] =
                switch kind {
                case .checkpointOtherFormat: base.otherFormat
                case .checkpointOtherQueue: base.foreign
                default: base.older
                }
        default:
            break
        }
    }

    /// A damage of the spools directory.
    private func applyToSpools(
        _ tree: inout FileTree, base: StoreBase, expectations: inout StoreExpectations, _ random: inout SplitMix64
    ) {
        switch self {
        case .spoolSegment(let index, let damage):
            let path = base.spoolsPath + "/" + base.spools[index].name
            var spool = tree.subtree(path)
            if !spool.files.isEmpty { damage.apply(to: &spool.files, foreign: spool.files, &random) }
            tree.graft(spool, at: path)
            expectations.damagedSpools.insert(base.spools[index].name)
        case .spoolName(let name, let index):
            let path = base.spoolsPath + "/" + name
            tree.graft(tree.subtree(base.spoolsPath + "/" + base.spools[index].name), at: path)
            expectations.kept.append(path)
        case .spoolsStray(let stray, let name):
            let path = base.spoolsPath + "/" + name
            tree.prune(path)  // a stray POKE directory replaces the writers' POKE file
            switch stray {
            case .file, .fileNamedAsSpool:
                tree.files[path] = random.nextBytes(1 + random.next(below: 100))
            case .directory:
                tree.directories.insert(path)
                tree.files[path + "/inside"] = random.nextBytes(10)
            case .emptySpool, .guardDirectory, .pokeDirectory:
                tree.directories.insert(path)
            }
            // Never the store's to delete; a spool that does not open is kept too.
            if [.file, .directory, .fileNamedAsSpool].contains(stray) { expectations.kept.append(path) }
        case .forgedSpool(let index):
            let forged = base.forged[index]
            tree.graft(forged.tree, at: base.spoolsPath + "/" + forged.name)
            if !expectations.forged.contains(where: { $0.name == forged.name }) { expectations.forged.append(forged) }
        default:
            break
        }
    }

    /// A damage of the payload files.
    private func applyToPayloads(
        _ tree: inout FileTree, base: StoreBase, expectations: inout StoreExpectations, _ random: inout SplitMix64
    ) {
        let payloads = base.queue + "/payloads"
        switch self {
        case .payloadStrayDirectory(let name):
            tree.directories.insert(payloads)
            tree.directories.insert(payloads + "/" + name)
            tree.files[payloads + "/" + name + "/inside"] = random.nextBytes(1 + random.next(below: 100))
            expectations.payloadStrays.append(name)
        case .payloadForeignFile(let name, let copy):
            tree.directories.insert(payloads)
            tree.files[payloads + "/" + name] =
                copy.flatMap { base.payloadFiles[$0].flatMap { tree.files[$0] } } ?? random.nextBytes(1 + random.next(below: 5000))
            expectations.payloadStrays.append(name)
        case .payloadCut(let id, let at):
            guard let path = base.payloadFiles[id], let bytes = tree.files[path] else { return }
            tree.files[path] = Array(bytes.prefix(at))
            expectations.damagedPayloads.insert(id)
        case .payloadFlipped(let id, let flips):
            guard let path = base.payloadFiles[id], var bytes = tree.files[path] else { return }
            let before = bytes
            for flip in flips where bytes.indices.contains(flip.offset) { bytes[flip.offset] ^= UInt8(1) << UInt8(flip.bit) }
            tree.files[path] = bytes
            // Two flips of one bit undo each other.
            if bytes != before { expectations.damagedPayloads.insert(id) }
        default:
            break
        }
    }
}
