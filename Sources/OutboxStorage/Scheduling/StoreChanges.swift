import OutboxModel
/// The changes one scheduler call made, in order. The first two are kept
/// inline: an enqueue makes one, an attempt one, a success two, so the
/// common call returns its changes without allocating an array (the rest,
/// a cascade or a batch, go to `overflow`).
package struct StoreChanges: RandomAccessCollection, RangeReplaceableCollection, ExpressibleByArrayLiteral, Sendable,
    Equatable
{
    private var first: StoreChange?
    private var second: StoreChange?
    private var overflow: [StoreChange] = []

    package init() {}

    init(_ change: StoreChange) { first = change }

    package init(arrayLiteral changes: StoreChange...) { append(contentsOf: changes) }

    package var startIndex: Int { 0 }
    package var endIndex: Int { first == nil ? 0 : second == nil ? 1 : 2 + overflow.count }

    package subscript(position: Int) -> StoreChange {
        switch position {
        case 0: first!
        case 1: second!
        default: overflow[position - 2]
        }
    }

    package mutating func append(_ change: StoreChange) {
        if first == nil {
            first = change
        } else if second == nil {
            second = change
        } else {
            overflow.append(change)
        }
    }

    package mutating func append(contentsOf changes: some Sequence<StoreChange>) {
        for change in changes { append(change) }
    }

    /// Any other edit: rebuilt from the edited elements (no hot path edits
    /// in the middle).
    package mutating func replaceSubrange(_ range: Range<Int>, with changes: some Collection<StoreChange>) {
        var all = Array(self)
        all.replaceSubrange(range, with: changes)
        self = StoreChanges()
        append(contentsOf: all)
    }

    package static func == (lhs: StoreChanges, rhs: StoreChanges) -> Bool { lhs.elementsEqual(rhs) }
}
