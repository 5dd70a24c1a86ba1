import Foundation
import PostgresNIO

extension PostgresIdempotencyKeyStore {
    /// A client configuration from a `postgres://user[:password]@host[:port]/database`
    /// URL (`postgresql://` too), with the statement and lock timeouts the
    /// store relies on to bound every wait (``Configuration/lockTimeout``,
    /// ``Configuration/statementTimeout``). TLS is off unless the URL says
    /// `?sslmode=require` (or `prefer`).
    ///
    /// The password may be percent-encoded; it is never part of an error
    /// message.
    public static func clientConfiguration(url text: String, configuration: Configuration = Configuration()) throws
        -> PostgresClient.Configuration
    {
        try configuration.validate()
        guard let url = URLComponents(string: text), let scheme = url.scheme, ["postgres", "postgresql"].contains(scheme) else {
            throw PostgresIdempotencyKeyStoreError(.invalidURL, "expected postgres://user@host:port/database, not a \(text.prefix(11))… URL")
        }
        guard let host = url.host, !host.isEmpty, let user = url.user, !user.isEmpty else {
            throw PostgresIdempotencyKeyStoreError(.invalidURL, "a postgres:// URL needs a user and a host (postgres://user@host:port/database)")
        }
        let port = url.port ?? 5432
        guard (1...65535).contains(port) else { throw PostgresIdempotencyKeyStoreError(.invalidURL, "port \(port) is out of range") }
        let path = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        let sslMode = url.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        default: throw PostgresIdempotencyKeyStoreError(.invalidURL, "unknown sslmode \(sslMode)")
        }
        var client = PostgresClient.Configuration(
            host: host, port: port, username: user.removingPercentEncoding ?? user,
            password: url.password?.removingPercentEncoding ?? url.password,
            database: path.isEmpty ? nil : path, tls: tls)
        client.options.additionalStartupParameters = configuration.sessionParameters
        client.options.maximumConnections = configuration.maximumConnections
        return client
    }
}
