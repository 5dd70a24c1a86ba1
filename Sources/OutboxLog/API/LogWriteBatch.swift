/// A batch of writes for ``OutboxLog/submit(_:using:)``, in order. The
/// first two are kept inline: the outbox store's enqueue writes one record
/// and an outcome one or two, so the common batch reaches the log without
/// an array allocated for it.
package struct LogWriteBatch: RandomAccessCollection, Sendable {
    private var first: LogWrite?
    private var second: LogWrite?
    private var rest: [LogWrite] = []

    package init() {}

    package init(_ write: LogWrite) { first = write }

    package var startIndex: Int { 0 }
    package var endIndex: Int { first == nil ? 0 : second == nil ? 1 : 2 + rest.count }

    package subscript(position: Int) -> LogWrite {
        switch position {
        case 0: first!
        case 1: second!
        default: rest[position - 2]
        }
    }

    package mutating func append(_ write: LogWrite) {
        if first == nil {
            first = write
        } else if second == nil {
            second = write
        } else {
            rest.append(write)
        }
    }
}
