/// How many cycles a mode may run: a cycle count, a deadline, or both.
struct Budget: Sendable {
    let first: Int
    let limit: Int?
    let deadline: ContinuousClock.Instant?

    init(first: Int = 0, cycles: Int?, deadline: ContinuousClock.Instant?) {
        precondition(cycles != nil || deadline != nil, "a torture run needs a cycle count or a time limit")
        self.first = first
        self.limit = cycles
        self.deadline = deadline
    }

    /// Whether cycle number `cycle` may start.
    func allows(_ cycle: Int) -> Bool {
        if let limit, cycle >= first + limit { return false }
        if let deadline, ContinuousClock.now >= deadline { return false }
        return true
    }

    /// The cycle numbers, lazily, until the budget runs out.
    var cycles: some Sequence<Int> {
        sequence(first: first) { $0 + 1 }.lazy.prefix { allows($0) }
    }
}
