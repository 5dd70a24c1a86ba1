/// The lines a queue worker prints to its parent, one event per line, each
/// written before the worker goes on (``WorkerLine/send()``'s rule):
///
/// ```
/// ready                               the queue is open
/// resumed c0 41                       consumer c0 reads on after 41 (0: from the oldest)
/// appended 1 17 230                   producer 1's element 17 is at position 230: acknowledged
/// delivered c0 230 1:3:17             c0 read position 230, holding element 1:3:17
/// committed c0 230                    c0's commit through 230 returned
/// rewound c0                          c0 went back to its commit
/// trimmed 120                         a trim removed every element below position 120 (0: none)
/// done                                every producer finished, every consumer caught up
/// failed <message>                    a call threw: a violation by itself
/// ```
enum QueueWorkerLine: Sendable, Hashable {
    case ready
    case resumed(consumer: String, after: UInt64)
    case appended(producer: Int, index: Int, position: UInt64)
    case delivered(consumer: String, position: UInt64, element: String)
    case committed(consumer: String, through: UInt64)
    case rewound(consumer: String)
    case trimmed(below: UInt64)
    case done
    case failed(String)
    case unknown(String)

    init(parsing line: String) {
        let parts = line.split(separator: " ", maxSplits: 3).map(String.init)
        switch (parts.first, parts.count) {
        case ("ready", 1): self = .ready
        case ("done", 1): self = .done
        case ("failed", _): self = .failed(parts.dropFirst().joined(separator: " "))
        case ("resumed", 3): self = UInt64(parts[2]).map { .resumed(consumer: parts[1], after: $0) } ?? .unknown(line)
        case ("appended", 4):
            if let producer = Int(parts[1]), let index = Int(parts[2]), let position = UInt64(parts[3]) {
                self = .appended(producer: producer, index: index, position: position)
            } else {
                self = .unknown(line)
            }
        case ("delivered", 4): self = UInt64(parts[2]).map { .delivered(consumer: parts[1], position: $0, element: parts[3]) } ?? .unknown(line)
        case ("committed", 3): self = UInt64(parts[2]).map { .committed(consumer: parts[1], through: $0) } ?? .unknown(line)
        case ("rewound", 2): self = .rewound(consumer: parts[1])
        case ("trimmed", 2): self = UInt64(parts[1]).map(QueueWorkerLine.trimmed) ?? .unknown(line)
        default: self = .unknown(line)
        }
    }

    var text: String {
        switch self {
        case .ready: "ready"
        case .resumed(let consumer, let after): "resumed \(consumer) \(after)"
        case .appended(let producer, let index, let position): "appended \(producer) \(index) \(position)"
        case .delivered(let consumer, let position, let element): "delivered \(consumer) \(position) \(element)"
        case .committed(let consumer, let through): "committed \(consumer) \(through)"
        case .rewound(let consumer): "rewound \(consumer)"
        case .trimmed(let below): "trimmed \(below)"
        case .done: "done"
        case .failed(let message): "failed \(WorkerLine.oneLine(message))"
        case .unknown(let line): line
        }
    }

    func send() { WorkerLine.unknown(text).send() }
}
