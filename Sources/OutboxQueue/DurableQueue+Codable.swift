import Foundation

extension DurableQueue {
    /// Appends `value`, encoded as JSON by `encoder`, as one element; see
    /// ``append(_:durability:)``.
    ///
    /// - Throws: `invalidArgument` if `value` does not encode (nothing is
    ///   appended), and what ``append(_:durability:)`` throws.
    @discardableResult
    public func append<Value: Encodable>(
        encoding value: Value, with encoder: JSONEncoder = JSONEncoder(), durability: Durability = .written
    ) async throws(QueueError) -> QueuePosition {
        let bytes: Data
        do { bytes = try encoder.encode(value) } catch {
            throw QueueError(.invalidArgument, "cannot encode \(Value.self) as an element: \(error)")
        }
        return try await append(Array(bytes), durability: durability)
    }
}

extension QueueElement {
    /// The element's bytes decoded as JSON into `type` (an element appended
    /// with ``DurableQueue/append(encoding:with:durability:)``).
    ///
    /// - Throws: the decoder's `DecodingError` when the bytes are not a `Value`.
    public func decoded<Value: Decodable>(as type: Value.Type, with decoder: JSONDecoder = JSONDecoder()) throws -> Value {
        try decoder.decode(type, from: Data(bytes))
    }
}
