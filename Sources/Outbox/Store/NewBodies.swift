/// The new entry bodies one store change writes: none, one (an enqueue,
/// the hot path: no array to allocate for it), or many (a transaction).
struct NewBodies: RandomAccessCollection, Sendable {
    private enum Storage: Sendable {
        case one(PreparedBody)
        case many([PreparedBody])
    }

    private let storage: Storage

    static let none = NewBodies(storage: .many([]))

    static func one(_ body: PreparedBody) -> NewBodies { NewBodies(storage: .one(body)) }

    static func many(_ bodies: [PreparedBody]) -> NewBodies { NewBodies(storage: .many(bodies)) }

    private init(storage: Storage) { self.storage = storage }

    var startIndex: Int { 0 }

    var endIndex: Int {
        switch storage {
        case .one: 1
        case .many(let bodies): bodies.count
        }
    }

    subscript(position: Int) -> PreparedBody {
        switch storage {
        case .one(let body):
            precondition(position == 0, "index \(position) out of range")
            return body
        case .many(let bodies): return bodies[position]
        }
    }
}
