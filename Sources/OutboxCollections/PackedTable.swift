/// A hash map laid out for millions of entries: the engine's index (log key
/// → record locations) and the outbox scheduler's entry table (entry id →
/// scheduling metadata) are both one of these.
///
/// Where a `Dictionary` keeps key and value in buckets it holds at most
/// three-quarters full and grows by doubling (so an entry costs between 1.33
/// and 2.7 times its size, 117 bytes per 17-byte log key), this table keeps
/// the elements **dense**, in pages of 4,096, and a separate open-addressing
/// table of 8-byte slots (linear probing, at most 80 % full, grown by half):
/// an element costs its own size plus 10–15 bytes. A removed element's place
/// in the dense pages is reused by the next insertion.
///
/// Each slot holds an element's position and 32 bits of its key's hash, so
/// a probe compares hashes without touching the element, and growing the
/// table never rehashes a key. Removal shifts the following slots back
/// (no tombstones). Hashes are keyed per process (`_rawHashValue(seed:)`
/// with a seed drawn at launch, as `Dictionary` does), so which keys collide
/// cannot be worked out from outside.
///
/// Copies share storage (copy on write) page by page: a copy taken to write
/// a checkpoint costs the caller one page copy for each page it later
/// changes, not a copy of the whole table. ``denseElements`` hands out such a
/// copy without the slot table.
///
/// Every operation is `@inlinable`, so that each user in another module
/// (the engine's index, the outbox scheduler's entry table) is specialized
/// for its key and value types: Swift 6.3 does not specialize `@inlinable
/// package` generics across modules, and unspecialized every access looked
/// its element types' metadata up at run time (Docs/BENCHMARKS.md,
/// "Generic code across modules").
///
/// - Complexity: a lookup, insertion, update or removal is O(1) on average
///   (expected probe length under 3 at 80 % load); an insertion that grows
///   the slot table is O(*n*) once, amortized O(1). ``keys``, ``values``,
///   ``forEach(_:)`` and a copy's first write to a page are O(*n*) (the
///   last O(4,096)).
public struct PackedTable<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    public struct Element: Sendable {
        public var key: Key
        public var value: Value

        @inlinable public init(key: Key, value: Value) {
            self.key = key
            self.value = value
        }
    }

    @inlinable static var pageShift: Int { 12 }
    @inlinable static var pageSize: Int { 1 << pageShift }

    @usableFromInline var dense = DenseElements()
    /// `(position + 1) << 32 | hash`; 0 is an empty slot.
    @usableFromInline var slots: [UInt64] = []
    /// ``count``'s storage, settable by the inlinable operations.
    @usableFromInline var storedCount = 0
    /// The process's seed, read once: a global read on every hash is a
    /// call into this module and a once-check.
    @usableFromInline let seed = PackedTableSeed.value

    @inlinable public var count: Int { storedCount }

    @inlinable public init() {}

    @inlinable public init(minimumCapacity: Int) {
        reserveCapacity(minimumCapacity)
    }

    @inlinable public var isEmpty: Bool { count == 0 }

    /// How many elements fit before the slot table grows.
    @inlinable public var capacity: Int { slots.count * 4 / 5 }

    /// Makes room for `minimumCapacity` elements without growing again.
    @inlinable public mutating func reserveCapacity(_ minimumCapacity: Int) {
        let needed = minimumCapacity + minimumCapacity / 4 + 1
        if needed > slots.count { resize(to: needed) }
    }

    // MARK: Lookup

    @inlinable public subscript(key: Key) -> Value? {
        get {
            guard let (_, position) = find(key, hash: hash(key)) else { return nil }
            return dense[position].value
        }
        set {
            if let newValue { updateValue(newValue, forKey: key) } else { removeValue(forKey: key) }
        }
    }

    @inlinable public func contains(_ key: Key) -> Bool { find(key, hash: hash(key)) != nil }

    /// Sets `key`'s value; returns the value it replaced, if any.
    @discardableResult
    @inlinable public mutating func updateValue(_ value: Value, forKey key: Key) -> Value? {
        let hash = self.hash(key)
        if let (_, position) = find(key, hash: hash) {
            return dense.withElement(at: position) { element in
                defer { element.value = value }
                return element.value
            }
        }
        insertNew(Element(key: key, value: value), hash: hash)
        return nil
    }

    /// Inserts `value` for `key` unless `key` has a value already; returns
    /// whether it inserted. One probe: the search for `key` ends at the
    /// empty slot the new element takes (``updateValue(_:forKey:)`` probes
    /// twice: to find the key, then to place it). For loading a table from
    /// input that must not name a key twice.
    ///
    /// - Complexity: O(1) on average; O(*n*) once when the slot table grows
    ///   (it may grow even when `key` is present).
    @inlinable public mutating func insertIfAbsent(_ value: Value, forKey key: Key) -> Bool {
        if (count + 1) * 5 > slots.count * 4 { resize(to: max(16, slots.count + slots.count / 2)) }
        let hash = self.hash(key)
        var slot = home(hash)
        while true {
            let entry = slots[slot]
            if entry == 0 { break }
            if UInt32(truncatingIfNeeded: entry) == hash, dense[Int(entry >> 32) - 1].key == key { return false }
            slot += 1
            if slot == slots.count { slot = 0 }
        }
        let position = dense.insert(Element(key: key, value: value))
        slots[slot] = UInt64(position + 1) << 32 | UInt64(hash)
        storedCount += 1
        return true
    }

    /// Changes `key`'s value in place; `nil` (and no call) if it has none.
    @discardableResult
    @inlinable public mutating func modifyValue<Result>(forKey key: Key, _ body: (inout Value) -> Result) -> Result? {
        guard let (_, position) = find(key, hash: hash(key)) else { return nil }
        return dense.withElement(at: position) { body(&$0.value) }
    }

    /// Removes `key`; returns its value, if it had one.
    @discardableResult
    @inlinable public mutating func removeValue(forKey key: Key) -> Value? {
        guard let (slot, position) = find(key, hash: hash(key)) else { return nil }
        let value = dense[position].value
        dense.free(position)
        storedCount -= 1
        removeSlot(at: slot)
        return value
    }

    @inlinable public mutating func removeAll() {
        dense = DenseElements()
        slots = []
        storedCount = 0
    }

    // MARK: Iteration

    /// Every key, in no particular order.
    @inlinable public var keys: [Key] {
        var result: [Key] = []
        result.reserveCapacity(count)
        dense.forEach { result.append($0.key) }
        return result
    }

    /// Every value, in no particular order.
    @inlinable public var values: [Value] {
        var result: [Value] = []
        result.reserveCapacity(count)
        dense.forEach { result.append($0.value) }
        return result
    }

    /// Calls `body` with every element, in no particular order.
    @inlinable public func forEach(_ body: (Element) throws -> Void) rethrows {
        try dense.forEach(body)
    }

    /// The elements without the slot table: a copy that shares the pages
    /// (see the type's documentation), for writing a checkpoint from.
    @inlinable public var denseElements: DenseElements { dense }

    // MARK: Internals

    @inlinable func hash(_ key: Key) -> UInt32 {
        UInt32(truncatingIfNeeded: key._rawHashValue(seed: seed))
    }

    /// The slot a hash starts probing at: `hash × slots / 2³²` (no modulo,
    /// and any table size works).
    @inlinable func home(_ hash: UInt32) -> Int {
        Int((UInt64(hash) &* UInt64(slots.count)) >> 32)
    }

    @inlinable func find(_ key: Key, hash: UInt32) -> (slot: Int, position: Int)? {
        guard !slots.isEmpty else { return nil }
        var slot = home(hash)
        while true {
            let entry = slots[slot]
            if entry == 0 { return nil }
            if UInt32(truncatingIfNeeded: entry) == hash {
                let position = Int(entry >> 32) - 1
                if dense[position].key == key { return (slot, position) }
            }
            slot += 1
            if slot == slots.count { slot = 0 }
        }
    }

    @inlinable mutating func insertNew(_ element: Element, hash: UInt32) {
        if (count + 1) * 5 > slots.count * 4 { resize(to: max(16, slots.count + slots.count / 2)) }
        let position = dense.insert(element)
        placeSlot(UInt64(position + 1) << 32 | UInt64(hash))
        storedCount += 1
    }

    @inlinable mutating func placeSlot(_ entry: UInt64) {
        var slot = home(UInt32(truncatingIfNeeded: entry))
        while slots[slot] != 0 {
            slot += 1
            if slot == slots.count { slot = 0 }
        }
        slots[slot] = entry
    }

    /// Empties `slot` and shifts back the slots after it that probing would
    /// no longer reach (linear probing's deletion without tombstones).
    @inlinable mutating func removeSlot(at slot: Int) {
        var hole = slot
        var next = slot
        slots[hole] = 0
        while true {
            next += 1
            if next == slots.count { next = 0 }
            let entry = slots[next]
            if entry == 0 { return }
            let start = home(UInt32(truncatingIfNeeded: entry))
            // The entry may fill the hole unless its home lies cyclically
            // in (hole, next]: then it sits where probing from home finds it.
            let reachable = hole <= next ? (start > hole && start <= next) : (start > hole || start <= next)
            if !reachable {
                slots[hole] = entry
                slots[next] = 0
                hole = next
            }
        }
    }

    @inlinable mutating func resize(to size: Int) {
        let old = slots
        slots = [UInt64](repeating: 0, count: max(size, 16))
        for entry in old where entry != 0 { placeSlot(entry) }
    }
}

extension PackedTable {
    /// The dense storage: elements in pages of ``PackedTable/pageSize``, a bit
    /// per position saying whether it holds an element, and the positions
    /// freed by removals, reused first.
    public struct DenseElements: Sendable {
        @usableFromInline var pages: [[Element]] = []
        @usableFromInline var occupied: [UInt64] = []
        @usableFromInline var freed: [UInt32] = []
        /// Positions handed out so far (the free ones included).
        @usableFromInline var used = 0

        @inlinable public init() {}

        @inlinable subscript(position: Int) -> Element {
            pages[position >> PackedTable.pageShift][position & (PackedTable.pageSize - 1)]
        }

        @inlinable mutating func withElement<Result>(at position: Int, _ body: (inout Element) -> Result) -> Result {
            body(&pages[position >> PackedTable.pageShift][position & (PackedTable.pageSize - 1)])
        }

        /// Stores `element` in a freed position if there is one, else at the end.
        @inlinable mutating func insert(_ element: Element) -> Int {
            if let position = freed.popLast().map(Int.init) {
                pages[position >> PackedTable.pageShift][position & (PackedTable.pageSize - 1)] = element
                occupied[position >> 6] |= 1 << UInt64(position & 63)
                return position
            }
            let position = used
            used += 1
            if position & (PackedTable.pageSize - 1) == 0 {
                var page: [Element] = []
                page.reserveCapacity(PackedTable.pageSize)
                pages.append(page)
            }
            pages[pages.count - 1].append(element)
            if position & 63 == 0 { occupied.append(0) }
            occupied[position >> 6] |= 1 << UInt64(position & 63)
            return position
        }

        /// Marks `position` free. The element stays in its page until the
        /// position is reused (an element holding heap memory keeps it that long).
        @inlinable mutating func free(_ position: Int) {
            occupied[position >> 6] &= ~(1 << UInt64(position & 63))
            freed.append(UInt32(position))
        }

        /// Calls `body` with every element held, in position order.
        @inlinable public func forEach(_ body: (Element) throws -> Void) rethrows {
            for (word, bits) in occupied.enumerated() where bits != 0 {
                var remaining = bits
                while remaining != 0 {
                    let bit = remaining.trailingZeroBitCount
                    remaining &= remaining - 1
                    try body(self[word << 6 | bit])
                }
            }
        }
    }
}

/// The seed of every ``PackedTable``'s hashes: drawn once per process from
/// the system's random source, never stored.
@usableFromInline enum PackedTableSeed {
    @usableFromInline static let value = Int.random(in: .min ... .max)
}
