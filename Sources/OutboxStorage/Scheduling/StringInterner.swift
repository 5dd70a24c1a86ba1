/// Small integer ids for the strings many entries share (scopes, types,
/// coalescing keys), so each entry's metadata stores 4 bytes instead of a
/// `String`. Reference-counted: a scope used by no entry any more is freed,
/// so a long-running app does not accumulate every conversation it ever had.
package struct StringInterner: Sendable {
    private var ids: [String: (id: UInt32, references: Int)] = [:]
    private var names: [UInt32: String] = [:]
    private var freed: [UInt32] = []
    private var next: UInt32 = 1

    /// The id of `name` (0 for `nil`), taking a reference.
    mutating func retain(_ name: String?) -> UInt32 {
        guard let name else { return 0 }
        if let existing = ids[name] {
            ids[name] = (existing.id, existing.references + 1)
            return existing.id
        }
        let id = freed.popLast() ?? next
        if id == next { next += 1 }
        ids[name] = (id, 1)
        names[id] = name
        return id
    }

    /// Drops a reference taken by ``retain(_:)``.
    mutating func release(_ id: UInt32) {
        guard id != 0, let name = names[id], let entry = ids[name] else { return }
        if entry.references > 1 {
            ids[name] = (id, entry.references - 1)
        } else {
            ids[name] = nil
            names[id] = nil
            freed.append(id)
        }
    }

    init() {}

    /// An interner holding `names` (id → name), each with the number of
    /// references given (0: the name is not kept).
    init(restoring names: [UInt32: String], references: [UInt32: Int]) {
        for (id, name) in names {
            next = max(next, id + 1)
            guard let count = references[id], count > 0 else { continue }
            ids[name] = (id, count)
            self.names[id] = name
        }
        freed = (1..<next).filter { self.names[$0] == nil }
    }

    /// Every name with its id.
    package var all: [(id: UInt32, name: String)] { names.map { ($0.key, $0.value) } }

    /// The id of `name` if some entry uses it, without taking a reference.
    func lookup(_ name: String) -> UInt32? { ids[name]?.id }

    func name(_ id: UInt32) -> String? { id == 0 ? nil : names[id] }
}
