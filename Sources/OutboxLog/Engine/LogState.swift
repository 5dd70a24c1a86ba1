import DequeModule

/// A segment as the engine tracks it. Its file is `nil` between the append
/// that starts the segment and the writer thread creating it on disk.
struct SegmentSlot {
    var header: SegmentHeader
    var file: SegmentFile?
    /// Bytes the writer has handed to the OS (header included); for a
    /// read-only log with a torn tail, where the readable records end.
    var writtenSize: Int64
    /// A read-only log left damage in this segment: scans step over it.
    var knownDamage = false
}

/// Bytes waiting for the writer thread, in order.
enum WriteChunk {
    /// Create a new segment file and write everything after it there.
    case create(id: UInt32, header: SegmentHeader)
    /// Write `data` at `offset` of segment `segment`; it ends with the record
    /// numbered `lastSequence`.
    case bytes(segment: UInt32, offset: Int64, data: [UInt8], lastSequence: UInt64)

    var byteCount: Int {
        if case .bytes(_, _, let data, _) = self { return data.count }
        return 0
    }
}

/// A compaction waiting for the writer to create the segment its roll started.
struct CreationWaiter {
    var segment: UInt32
    var continuation: UnsafeContinuation<Result<Void, OutboxLogError>, Never>
}

/// An append (or a barrier) waiting to be written or synced.
struct Waiter {
    var sequence: UInt64
    var durable: Bool
    /// Unsafe rather than checked: this is resumed once per append, exactly
    /// once by construction (the writer removes it from `waiters` first).
    var continuation: UnsafeContinuation<Result<Void, OutboxLogError>, Never>

    func isSatisfied(written: UInt64, durable durableSequence: UInt64) -> Bool {
        durable ? sequence <= durableSequence : sequence <= written
    }
}

/// Everything about an open log that changes, behind one lock.
///
/// Appends encode their frames into `openChunk` under this lock (the CRC of a
/// 256-byte record takes ~0.2 µs), update the index, and leave; the writer
/// thread takes whole chunks and does the I/O without the lock.
struct LogState {
    enum Phase {
        case open
        case poisoned(OutboxLogError)
        case closed
    }

    var phase: Phase = .open
    /// Set while an open's index load runs in the background: the index is
    /// incomplete until then (see `LogCore+IndexLoad.swift`).
    var indexLoading: IndexLoading?
    /// Bytes appended since the last index checkpoint, and that checkpoint's
    /// size: the next is due once the first reaches the interval or the second.
    var bytesSinceCheckpoint = 0
    var lastCheckpointSize = 0
    /// `close()` has begun: no new appends, reads or compactions. The phase
    /// stays what it was (a poisoned log stays poisoned while it closes).
    var closing = false
    var index: LogIndex
    var slots: [UInt32: SegmentSlot]
    /// Segment ids, oldest (lowest base) first.
    var order: [UInt32]
    var nextSegmentID: UInt32

    // MARK: Write path

    var nextSequence: UInt64
    /// The newest record appended in this life that is not a marker, or
    /// the newest the open found: what a client's checkpoint covers
    /// (``LogCore/position``). Not the newest marker: the next open cuts a
    /// clean close's trailing markers and numbers its own from there, so a
    /// checkpoint claiming one would claim a number the log no longer holds.
    var lastContentSequence: UInt64 = 0
    /// Every record up to here has been written to the OS.
    var writtenSequence: UInt64
    /// Every record up to here is on stable storage.
    var durableSequence: UInt64
    /// The segment appends go to; `nil` until the first append after open
    /// when recovery left no appendable segment.
    var activeID: UInt32?
    /// The active segment's size including bytes not yet written.
    var activeSize: Int64 = 0
    var activeCRCSeed: UInt32 = 0

    /// Sealed chunks for the writer, oldest first.
    var queue: Deque<WriteChunk> = []
    /// The chunk appends are filling (for the active segment).
    var openChunk: (offset: Int64, data: [UInt8], lastSequence: UInt64)?
    var pendingBytes = 0
    /// Room promised to appends that waited for it and have yet to encode.
    var reservedBytes = 0
    /// Appends waiting for room under `maximumPendingBytes`, first come first served.
    var roomWaiters: Deque<RoomWaiter> = []
    /// Chunk buffers the writer has finished with, kept for reuse: a fresh
    /// megabyte buffer costs a page fault per 4 KiB on first touch.
    var spareBuffers: [[UInt8]] = []
    /// Whether the newest frame is a marker: nothing since the last
    /// checkpoint, so close need not write another.
    var lastFrameIsMarker = true
    var waiters: [Waiter] = []
    var creationWaiters: [CreationWaiter] = []
    var flushRequested = false
    /// Who is writing segment bytes now, if anyone: the writer thread, or a
    /// caller writing its own append in place (`LogCore+InPlace.swift`).
    var writeToken: WriteTokenHolder?
    var writerSleeping = false
    var stopRequested = false
    var writerExit: CheckedContinuation<Result<Void, OutboxLogError>, Never>?
    /// Callers of `close()` waiting for another caller's close to finish.
    var closeWaiters: [CheckedContinuation<Void, Never>] = []

    // MARK: Compaction

    var compactionRunning = false
    var compactionCancelled = false
    var compactionWaiters: [CheckedContinuation<Void, Never>] = []

    // MARK: Counters

    var syncs = 0
    var compactions = 0

    var isAcceptingWrites: OutboxLogError? {
        switch phase {
        case .open: closing ? .closed() : nil
        case .poisoned(let error): .poisoned(by: error)
        case .closed: .closed()
        }
    }

    /// Moves the open chunk to the writer's queue.
    mutating func sealOpenChunk() {
        guard let chunk = openChunk, let activeID else { return }
        queue.append(.bytes(segment: activeID, offset: chunk.offset, data: chunk.data, lastSequence: chunk.lastSequence))
        openChunk = nil
    }

    /// Starts a new segment whose first record will be `nextSequence`.
    mutating func startSegment() {
        sealOpenChunk()
        let id = nextSegmentID
        nextSegmentID += 1
        let header = SegmentHeader(baseSequence: nextSequence, coverEnd: nil, salt: UInt64.random(in: 1...UInt64.max))
        queue.append(.create(id: id, header: header))
        slots[id] = SegmentSlot(header: header, file: nil, writtenSize: 0)
        order.append(id)
        index.usage[id] = SegmentUsage()
        activeID = id
        activeSize = Int64(SegmentHeader.size)
        activeCRCSeed = header.recordCRCSeed
    }

    /// Makes sure the active segment can take `bytes` more, starting a new
    /// one if it is full (or there is none), and opens a chunk to encode into.
    mutating func prepareActiveSegment(for bytes: Int, configuration: OutboxLog.Configuration) {
        if activeID == nil
            || (activeSize > Int64(SegmentHeader.size) && activeSize + Int64(bytes) > Int64(configuration.segmentSize))
        {
            startSegment()
        }
        // Keep a chunk within one group commit: a batch that would push it
        // past the limit starts a new chunk (a batch larger than the limit
        // gets a chunk of its own).
        if let chunk = openChunk, !chunk.data.isEmpty, chunk.data.count + bytes > configuration.groupCommitLimit {
            sealOpenChunk()
        }
        if openChunk == nil {
            var data = spareBuffers.popLast() ?? []
            data.removeAll(keepingCapacity: true)  // a buffer written in place comes back full
            data.reserveCapacity(min(configuration.groupCommitLimit, max(bytes, 4096)))
            openChunk = (offset: activeSize, data: data, lastSequence: 0)
        }
    }

    /// Encodes one frame at the end of the active segment and indexes it.
    /// Call ``prepareActiveSegment(for:configuration:)`` first and
    /// ``finishEncoding(configuration:)`` after the batch.
    mutating func encodeFrame(
        _ kind: FrameKind, key: LogKey, batchContinues: Bool, batchContinuation: Bool, expiry: Int64? = nil,
        payloadCount: Int = 0, appendPayload: (inout [UInt8]) -> Void = { _ in }
    ) -> UInt64 {
        let sequence = nextSequence
        nextSequence += 1
        let before = openChunk!.data.count
        RecordFrame.append(
            to: &openChunk!.data, crcSeed: activeCRCSeed, kind: kind, batchContinues: batchContinues,
            batchContinuation: batchContinuation, sequence: sequence, durableWatermark: durableSequence, key: key,
            payloadCount: payloadCount, expiry: expiry, appendPayload: appendPayload)
        let length = openChunk!.data.count - before
        let location = Location(segment: activeID!, offset: UInt32(activeSize), length: UInt32(length))
        if indexLoading == nil {
            index.apply(kind, key: key, at: location, expiry: expiry)
        } else {
            indexLoading!.pending.append(PendingIndexUpdate(kind: kind, key: key, location: location, expiry: expiry))
        }
        bytesSinceCheckpoint += length
        activeSize += Int64(length)
        pendingBytes += length
        openChunk!.lastSequence = sequence
        lastFrameIsMarker = kind == .marker
        if kind != .marker { lastContentSequence = sequence }
        return sequence
    }

    mutating func finishEncoding(configuration: OutboxLog.Configuration) {
        if openChunk!.data.count >= configuration.groupCommitLimit { sealOpenChunk() }
    }

    /// Appends a marker vouching that everything up to `durableSequence` is
    /// on stable storage. Returns its sequence number.
    mutating func encodeMarker(configuration: OutboxLog.Configuration) -> UInt64 {
        prepareActiveSegment(for: RecordFrame.headerSize, configuration: configuration)
        let sequence = encodeFrame(.marker, key: LogKey([]), batchContinues: false, batchContinuation: false)
        finishEncoding(configuration: configuration)
        return sequence
    }

    /// Where `location` can be read from, or `nil` if its bytes have not
    /// reached the OS yet.
    func readableFile(for location: Location) -> SegmentFile? {
        guard let slot = slots[location.segment], let file = slot.file,
            Int64(location.offset) + Int64(location.length) <= slot.writtenSize
        else { return nil }
        return file
    }
}
