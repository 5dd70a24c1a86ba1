extension PackedTable {
    /// A table of the `count` elements `element(0)`, `element(1)`, … (asked
    /// for in that order), built at once; `nil` if two have the same key.
    /// For loading a large table from a file, such as an index checkpoint.
    ///
    /// One insertion per element probes the slot table at a random place:
    /// once the table outgrows the processor's caches (a million elements:
    /// 10 MB of slots), every insertion waits for a cache miss and a TLB
    /// miss. Here the elements are stored first, their slot entries kept
    /// aside and sorted into the table's regions of 4,096 slots (one pass),
    /// and the slots then filled region by region: each region's probes
    /// stay in the caches. The scratch (16 bytes per element) is mapped
    /// memory (see `MappedBuffer`); a table of under 8,192 slots, or one
    /// whose scratch cannot be mapped, is filled one insertion at a time.
    ///
    /// - Complexity: O(*n*) on average.
    @inlinable public init?<Failure: Error>(
        loadingUnique count: Int, _ element: (Int) throws(Failure) -> Element
    ) throws(Failure) {
        self.init()
        guard count > 0 else { return }
        reserveCapacity(count)
        let bits = Self.regionBits(forSlots: slots.count)
        let scratch: MappedBuffer
        do { scratch = try MappedBuffer(byteCount: bits == 0 ? 0 : count * 16) } catch { scratch = MappedBuffer() }
        guard scratch.count >= count * 16 else {
            for index in 0..<count {
                let next = try element(index)
                guard insertIfAbsent(next.value, forKey: next.key) else { return nil }
            }
            return
        }
        let entries = scratch.bytes.baseAddress!.bindMemory(to: UInt64.self, capacity: 2 * count)
        let sorted = entries + count
        var starts = [Int](repeating: 0, count: (1 << bits) + 1)
        for index in 0..<count {
            let next = try element(index)
            let hash = self.hash(next.key)
            let position = dense.insert(next)
            entries[index] = UInt64(position + 1) << 32 | UInt64(hash)
            starts[Int(hash >> (32 - bits)) + 1] += 1
        }
        storedCount = count
        for region in 0..<(1 << bits) { starts[region + 1] += starts[region] }
        for index in 0..<count {
            let region = Int(UInt32(truncatingIfNeeded: entries[index]) >> (32 - bits))
            sorted[starts[region]] = entries[index]
            starts[region] += 1
        }
        for index in 0..<count where !placeUniqueSlot(sorted[index]) { return nil }
    }

    /// How many bits of a hash name its region of about 4,096 slots (0:
    /// the table is too small to gain from regions), at most 12.
    @inlinable static func regionBits(forSlots slots: Int) -> Int {
        var bits = 0
        while bits < 12, slots >> (bits + 1) >= 4096 { bits += 1 }
        return bits
    }

    /// Places a slot entry of an element already stored; `false` if an
    /// element with the same key is in the table (the entry is not placed).
    @inlinable mutating func placeUniqueSlot(_ entry: UInt64) -> Bool {
        let hash = UInt32(truncatingIfNeeded: entry)
        var slot = home(hash)
        while true {
            let other = slots[slot]
            if other == 0 { break }
            if UInt32(truncatingIfNeeded: other) == hash, dense[Int(other >> 32) - 1].key == dense[Int(entry >> 32) - 1].key {
                return false
            }
            slot += 1
            if slot == slots.count { slot = 0 }
        }
        slots[slot] = entry
        return true
    }
}
