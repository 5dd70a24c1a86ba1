// The queue is configured with OutboxLog's types (`Durability`, each log's
// `Configuration`) and reports its errors: a queue user needs them, and
// should not have to import the engine to name them.
@_exported import OutboxLog
