// swift-tools-version: 6.1
//
// Every Swift sample of README.md and of the DocC catalogs, compiled: one
// executable per sample, each `main.swift` exactly the text the Markdown
// shows (Scripts/check-samples.sh fails CI when they drift apart).
//
//   cd Examples && swift build
//   swift run AppSample          # with `outbox serve` running (OUTBOX_API to point elsewhere)
//
// A nested package (like Benchmarks/) so that the root's `swift build` and
// `swift test` never build it, and so that the samples see swift-outbox the
// way an app does: through its products, by path. Each target lists only
// the products its sample imports, and `MemberImportVisibility` makes a
// name from a module the sample does not import an error: a sample that
// compiles here compiles in a fresh package as printed.

import PackageDescription

let strictImports: [SwiftSetting] = [.enableUpcomingFeature("MemberImportVisibility")]

let package = Package(
    name: "swift-outbox-examples",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [
        .package(name: "swift-outbox", path: "../"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // README: "Wiring the outbox in an iOS app" (runs against `outbox serve`).
        .executableTarget(
            name: "AppSample",
            dependencies: [
                .product(name: "Outbox", package: "swift-outbox"),
                .product(name: "OutboxHTTP", package: "swift-outbox"),
            ],
            swiftSettings: strictImports
        ),
        // DocC (Outbox): "Enqueueing from app extensions, widgets and other processes".
        .executableTarget(
            name: "ExtensionSample",
            dependencies: [.product(name: "Outbox", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
        // README: sealing the queue with a raw key.
        .executableTarget(
            name: "EncryptionSample",
            dependencies: [.product(name: "Outbox", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
        // README: "Embedding the log as a queue".
        .executableTarget(
            name: "LogSample",
            dependencies: [.product(name: "OutboxLog", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
        // README: "A durable queue with named consumers", and the
        // OutboxQueue DocC catalog's overview.
        .executableTarget(
            name: "QueueSample",
            dependencies: [.product(name: "OutboxQueue", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
        // README: "Adopting the middleware on a server".
        .executableTarget(
            name: "MiddlewareSample",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "IdempotencyKeyMiddleware", package: "swift-outbox"),
            ],
            swiftSettings: strictImports
        ),
        // README: "Several servers on PostgreSQL" (runs against the database
        // in DATABASE_URL; the app sample delivers to it).
        .executableTarget(
            name: "PostgresSample",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "IdempotencyKeyMiddleware", package: "swift-outbox"),
                .product(name: "IdempotencyKeyPostgres", package: "swift-outbox"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictImports
        ),
        // Sources/Outbox/Outbox.docc: the getting-started tutorial and an
        // article per feature. Each runs on its own, with an
        // in-memory store and a stand-in server.
        .executableTarget(
            name: "GettingStartedSample",
            dependencies: [.product(name: "Outbox", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
        // DocC (Outbox): "When a write does not go out".
        .executableTarget(
            name: "ExplainSample",
            dependencies: [.product(name: "Outbox", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
        .executableTarget(
            name: "ObservationSample",
            dependencies: [.product(name: "Outbox", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
        .executableTarget(
            name: "BackgroundSample",
            dependencies: [.product(name: "Outbox", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
        // DocC (Outbox): "Large payloads".
        .executableTarget(
            name: "LargePayloadSample",
            dependencies: [.product(name: "Outbox", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
        .executableTarget(
            name: "TransactionSample",
            dependencies: [.product(name: "Outbox", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
        .executableTarget(
            name: "ControlsSample",
            dependencies: [.product(name: "Outbox", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
        .executableTarget(
            name: "TypedHandlersSample",
            dependencies: [.product(name: "Outbox", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
        // Sources/OutboxLog/OutboxLog.docc/OutboxLog.md's overview.
        .executableTarget(
            name: "DocCLogSample",
            dependencies: [.product(name: "OutboxLog", package: "swift-outbox")],
            swiftSettings: strictImports
        ),
    ],
    swiftLanguageModes: [.v6]
)
