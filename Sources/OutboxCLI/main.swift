print("outbox")
