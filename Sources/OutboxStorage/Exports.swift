// The queue's API speaks in the model's values (entries, requests, errors):
// whoever imports the storage gets them too.
@_exported import OutboxModel
