import OutboxBenchSupport

/// A peer queue as the queue rows drive it: blocking calls, each made on a
/// thread of the harness's own (never on Swift's cooperative pool). Every
/// element goes to one consumer: `take` removes what it returns, so
/// consumers compete for elements (our queue's named consumers each read
/// every element instead; QueueScenarios.swift says how the rows count both).
protocol BlockingQueue: Sendable {
    /// A short name for the rows: "SQLite FULL", "RocksDB 7.8.3 sync=1", …
    var name: String { get }

    /// Appends `element` at the end; returns once it has the row's
    /// durability (written: an app kill keeps it; durable: power loss does).
    /// Safe to call from several threads at once.
    func produce(_ element: [UInt8]) throws

    /// Removes up to `max` elements from the front and returns them, oldest
    /// first, once their removal has the row's durability; `[]` at once when
    /// the queue is empty (it never waits: the harness rings a doorbell after
    /// every produce). Safe to call from several threads at once: no element
    /// is returned twice.
    func take(max: Int) throws -> [[UInt8]]

    /// Appends `elements` as fast as the queue can, durability aside (the
    /// consume rows fill the queue before the clock starts).
    func fill(_ elements: [[UInt8]]) throws

    /// Closes it; the harness removes its directory after.
    func close() throws
}

/// The durability a queue row asks for.
enum QueueDurability: String, Sendable {
    /// Survives an app kill: in the page cache (our `.written`, SQLite
    /// `synchronous=NORMAL` in WAL mode, RocksDB `sync=false`, a plain `write`).
    case written
    /// Survives power loss: synced before returning (our `.durable`, SQLite
    /// `FULL`, RocksDB `sync=true`, `O_DSYNC` writes).
    case durable
}
