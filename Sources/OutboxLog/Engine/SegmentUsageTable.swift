/// Per-segment usage, keyed by segment id: a sorted array, not a
/// dictionary. Every append and every recovered record updates it, a log has
/// tens of segments, and a binary search over them costs less than one
/// `Hasher` round (the profile's largest line before this existed).
struct SegmentUsageTable: Sendable {
    private var ids: [UInt32] = []
    private var usages: [SegmentUsage] = []

    private func position(of id: UInt32) -> (found: Bool, at: Int) {
        // New segments get the highest id so far: check the end first.
        if let last = ids.last {
            if last == id { return (true, ids.count - 1) }
            if last < id { return (false, ids.count) }
        }
        var low = 0
        var high = ids.count
        while low < high {
            let middle = (low + high) / 2
            if ids[middle] < id { low = middle + 1 } else { high = middle }
        }
        return (low < ids.count && ids[low] == id, low)
    }

    subscript(id: UInt32) -> SegmentUsage? {
        get {
            let (found, at) = position(of: id)
            return found ? usages[at] : nil
        }
        set {
            let (found, at) = position(of: id)
            switch (found, newValue) {
            case (true, let value?): usages[at] = value
            case (true, nil):
                ids.remove(at: at)
                usages.remove(at: at)
            case (false, let value?):
                ids.insert(id, at: at)
                usages.insert(value, at: at)
            case (false, nil): break
            }
        }
    }

    subscript(id: UInt32, default defaultValue: @autoclosure () -> SegmentUsage) -> SegmentUsage {
        get { self[id] ?? defaultValue() }
        _modify {
            var (found, at) = position(of: id)
            if !found {
                ids.insert(id, at: at)
                usages.insert(defaultValue(), at: at)
                found = true
            }
            yield &usages[at]
        }
    }
}
