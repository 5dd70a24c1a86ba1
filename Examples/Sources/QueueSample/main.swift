import OutboxQueue

let queue = try await DurableQueue.open(at: "data/events")           // created, with its parents, if missing
try await queue.append(Array("signed-in".utf8), durability: .durable)     // survives power loss
try await queue.append(contentsOf: [Array("viewed".utf8), Array("bought".utf8)])  // one atomic batch

let shipper = try await queue.consumer(named: "shipper")    // reads on from its last commit
for element in try await shipper.next(max: 100) {
    print(element.position, String(decoding: element.bytes, as: UTF8.self))
}
if let read = shipper.position {
    try await shipper.commit(through: read)                 // durable: not delivered again after a restart
}
try await queue.trim()                                      // whole segments every consumer committed past
try await queue.close()
