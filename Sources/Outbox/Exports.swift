// An app writes `import Outbox` and gets the whole outbox: the queue and its
// stores (OutboxStorage) with the dispatcher that drains it.
@_exported import OutboxStorage
