"""Every goal the renderer judges a figure against, in one place.

A goal is a target, not a measurement, so it is typed here rather than read
from a results file. Each comment names where else the goal is stated; a
goal the renderer alone states appears in BENCHMARKS.md only through the
tables rendered from this module. Goals that a results file carries itself
(drain-cpu.json's `goalRatio`, drain-over-latency.json's `goalShareOfIdeal`
and `large.goalSeconds`) are read from there and are not repeated here.
"""

# The store against SQLite ("store-goals" table). outbox-compare checks some of
# these itself (Benchmarks/Sources/OutboxCompare/Render.swift, its `goals`):
# written ≥ 30× SQLite NORMAL, durable 64p ≥ 150k/s, durable 1p ≥ 0.9× the
# raw loop, ≥ 2× SQLite FULL, drain ≥ 100k/s, recovery ≥ 500 MB/s, depth
# within 1.2×. The enqueue + ack goal is 10× here and in that file alike.
ENGINE_WRITTEN = 300_000          # stated only in the store-goals table
WRITTEN_RATE = 150_000            # stated only in the store-goals table
WRITTEN_RATIO = 30                # Render.swift: "written ≥ 30× SQLite NORMAL"
ACK_RATIO = 10                    # Render.swift: the enqueue + acknowledge goal
DURABLE_LOOP = 0.9                # Render.swift; ARCHITECTURE.md "within 10%"
DURABLE_64P_RATE = 150_000        # Render.swift; ARCHITECTURE.md "≥150k `durable`"
DURABLE_64P_RATIO = 20            # Render.swift: "≥ 20× SQLite FULL at 64"
DRAIN = 100_000                   # Render.swift: "drain ≥ 100k entries/s"
FIRST_ENQUEUE_S = 0.3             # stated only in the store-goals table
NO_CHECKPOINT_S = 3               # stated only in the store-goals table
BYTES_PER_ENTRY = 200             # stated only in the store-goals table
MALLOC_ENQUEUE = 4                # stated only in the store-goals table
MALLOC_ACK = 2                    # stated only in the store-goals table
DURABLE_SQLITE = 2                # Render.swift: "≥ 2× SQLite FULL"
RECOVERY_MBPS = 500               # Render.swift; ARCHITECTURE.md "recovery ≥500 MB/s"
DEPTH_COST = 1.2                  # Render.swift: "within 1.2×"

# The engine alone ("engine-goals" table): ARCHITECTURE.md, "How the design
# reaches its speed goals".
ENGINE_DURABLE_LOOP = 0.9         # "within 10% of a raw write+fdatasync loop"
ENGINE_DURABLE_64P = 150_000      # "≥150k durable appends/s from 64 producers"
ENGINE_WRITTEN_RATE = 500_000     # "≥500k written"
ENGINE_BUFFERED_RATE = 1_000_000  # "≥1M buffered appends/s"
ENGINE_RECOVERY_MBPS = 500        # "recovery ≥500 MB/s"

# Under crash-recovery ("crash-goals" table): stated only there.
CRASH_1P = 1.5
CRASH_64P = 20
CRASH_FLUSH = 5
RESTART_P95_MS = 50
DURABLE_PRELOOP = 0.9             # Render.swift: "≥ 0.9× the preallocated overwrite loop"

# `outbox enqueue` ("enqueue-streams" prose): stated only here.
ENQUEUE_1M_RSS_MB = 100

# `outbox serve` ("server-goals" table): stated only there.
SERVER_BYTES_PER_KEY = 100
SERVER_RESTART_S = 1
SERVER_DURABLE_RATIO = 0.8
SERVER_MIDDLEWARE_RATIO = 0.9

# The engine against RocksDB ("engine-rocksdb" table). outbox-compare checks
# the same goals (Benchmarks/Sources/OutboxCompare/Goals.swift, engineGoals).
ROCKSDB_WRITTEN_RATE = 1_000_000  # Goals.swift: "engine written append, 1 writer ≥ 1M/s"
ROCKSDB_WRITTEN_RATIO = 3         # Goals.swift: "≥ 3× RocksDB --sync=0"
ROCKSDB_DURABLE_RATIO = 1         # Goals.swift: "≥ 1× RocksDB --sync=1" (1 and 64 writers)
ROCKSDB_PREALLOCATED_LOOP = 0.9   # Goals.swift: "≥ 0.9× the preallocated overwrite loop"

# The durable queue against peer queues ("queue" table). outbox-compare checks
# the same goals (Benchmarks/Sources/OutboxCompare/Queue/QueueGoals.swift).
QUEUE_PRODUCE_RATE = 300_000    # "queue written produce, 1 producer ≥ 300k/s (1M/s on the mapped path)"
QUEUE_CONSUME_RATE = 2_000_000  # "queue consume from the page cache ≥ 2M/s"
QUEUE_LATENCY_P99 = 20          # "queue append-to-consume p99 ≤ 20 µs at 1k elements/s (written)"
QUEUE_PEER_RATIOS = [("SQLite", 10), ("RocksDB", 2)]  # every row: ≥ 10× SQLite, ≥ 2× RocksDB
