// An app writes `import Outbox` and gets the whole outbox: the queue and its
// stores (OutboxStorage), their values (OutboxModel) and the dispatcher that
// drains them.
@_exported import OutboxModel
@_exported import OutboxStorage
