import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Routes commands across a Redis Cluster by hash slot, as its spec asks of a client: each key
/// goes to the master its slot map names; `MOVED` sends the command to the named node, records
/// the slot's new owner and reloads the map (`CLUSTER SLOTS`); `ASK` sends `ASKING` and the
/// command to the named node without touching the map, since the slot is only migrating;
/// `TRYAGAIN` and `CLUSTERDOWN` (a multi-key operation mid-migration, or a failover) are tried
/// again after a short pause. Redirections are bounded by `maxRedirects` and everything by the
/// call's deadline.
///
///     let reply = try cluster.send([Array("GET".utf8), key], key: key, until: deadline)
final class RedisCluster: Sendable {
    let seeds: [RedisEndpoint]
    let pool: RedisConnectionPool
    /// The owner of each slot, as last loaded; nil until the first load, or for a slot no
    /// master serves.
    private let slots = Mutex<[RedisEndpoint?]>([])
    /// The node that last gave a slot map, asked first next time.
    private let lastAnswered = Mutex<RedisEndpoint?>(nil)
    /// More `MOVED` or `ASK` than this in one call means the cluster is in flux: the call fails
    /// (and the cache skips the remote for a while) rather than chase it.
    static let maxRedirects = 5

    init(seeds: [RedisEndpoint], pool: RedisConnectionPool) {
        self.seeds = seeds
        self.pool = pool
    }

    /// Sends a command about `key` to the node that serves its slot, following redirections.
    func send(_ arguments: [[UInt8]], key: [UInt8], until deadline: ContinuousClock.Instant) throws -> RESPValue {
        let slot = HashSlot.of(key)
        var target = try owner(of: slot, until: deadline)
        var asking = false
        var redirects = 0
        var pause: Duration = .milliseconds(5)
        // The TRYAGAIN or CLUSTERDOWN being waited out: when the deadline then cuts a reload or
        // a send short, that wait, not the cut, is what the caller needs to hear.
        var waitedOut: String?
        while true {
            let reply: RESPValue
            do {
                reply = try pool.send(arguments, to: target, asking: asking, until: deadline)
            } catch RemoteStoreError.calledOnEventLoop {
                throw RemoteStoreError.calledOnEventLoop
            } catch {
                // The node may be gone (failed over, removed): its slots are looked up afresh
                // on their next call; the rest of the map, and the nodes serving it, still hold.
                forget(target)
                if let waitedOut, ContinuousClock.now >= deadline {
                    throw RemoteStoreError.redis("\(target): \(waitedOut) until the remote timeout")
                }
                throw error
            }
            asking = false
            guard case .error(let message) = reply else { return reply }
            let words = message.split(separator: " ")
            switch words.first {
            case "MOVED", "ASK":
                redirects += 1
                guard redirects <= Self.maxRedirects else {
                    throw RemoteStoreError.redis("cluster: more than \(Self.maxRedirects) redirections for slot \(slot) (last: \(message))")
                }
                guard words.count == 3, let next = RedisEndpoint(parsing: words[2], sameHost: target.host) else {
                    throw RemoteStoreError.redis("\(target): an unreadable redirection: \(message)")
                }
                if words[0] == "MOVED" {
                    slots.withLock { if $0.count == HashSlot.count { $0[slot] = next } }
                    // A slot moved, so others likely did too (a reshard moves ranges): reload
                    // now, from the node that knows; a failure leaves the recorded owner.
                    try? load(from: next, until: deadline)
                } else {
                    asking = true
                }
                target = next
            case "TRYAGAIN", "CLUSTERDOWN":
                guard ContinuousClock.now + pause < deadline else {
                    throw RemoteStoreError.redis("\(target): \(message) until the remote timeout")
                }
                // Waiting out a migration or a failover, which only time ends; the pause
                // doubles so that a long one is not hammered.
                Self.sleep(pause)
                pause = min(pause * 2, .milliseconds(200))
                waitedOut = message
                if words.first == "CLUSTERDOWN" { try? load(until: deadline) }
                do {
                    target = try owner(of: slot, until: deadline)
                } catch where ContinuousClock.now >= deadline {
                    throw RemoteStoreError.redis("\(target): \(message) until the remote timeout")
                }
            default:
                return reply
            }
        }
    }

    /// The node serving `slot`, loading the map first when there is none.
    private func owner(of slot: Int, until deadline: ContinuousClock.Instant) throws -> RedisEndpoint {
        if let known = slots.withLock({ $0.count == HashSlot.count ? $0[slot] : nil }) { return known }
        try load(until: deadline)
        if let known = slots.withLock({ $0.count == HashSlot.count ? $0[slot] : nil }) { return known }
        // No master claims the slot (the cluster is being set up or repaired): ask the node
        // that gave the map (else a seed), whose redirection or CLUSTERDOWN says what to do.
        return lastAnswered.withLock { $0 } ?? seeds[0]
    }

    /// Loads the slot map from the first node that gives one: the one that last did, then the
    /// seeds, then the nodes the old map named. Each but the last tried gets a share of the time
    /// left (at least `minAttempt`), so that one seed that accepts and never answers, or whose
    /// packets are dropped, cannot spend the whole call while the others are up.
    private func load(until deadline: ContinuousClock.Instant) throws {
        let known = slots.withLock { Set($0.compactMap { $0 }) }
        let last = lastAnswered.withLock { $0 }
        var candidates: [RedisEndpoint] = []
        for node in (last.map { [$0] } ?? []) + seeds + known.sorted(by: { $0.description < $1.description })
        where !candidates.contains(node) {
            candidates.append(node)
        }
        var lastError: any Error = RemoteStoreError.redis("cluster: no seed node")
        for (index, node) in candidates.enumerated() {
            let left = deadline - .now
            guard left > .zero else { break }
            let share = index == candidates.count - 1 ? left : min(left, max(left / (candidates.count - index), Self.minAttempt))
            do {
                try load(from: node, until: .now + share)
                return
            } catch RemoteStoreError.calledOnEventLoop {
                throw RemoteStoreError.calledOnEventLoop
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// The least time one node is given to answer `CLUSTER SLOTS` while others wait their turn:
    /// a loopback or LAN node answers in a millisecond or two, a TLS handshake over a WAN in
    /// a few hundred.
    static let minAttempt = Duration.milliseconds(300)

    /// Forgets which slots `node` served, after a call to it failed.
    private func forget(_ node: RedisEndpoint) {
        slots.withLock { map in
            for slot in map.indices where map[slot] == node { map[slot] = nil }
        }
        lastAnswered.withLock { if $0 == node { $0 = nil } }
    }

    /// Loads the slot map from `node` with `CLUSTER SLOTS` (Redis 3 and later; `CLUSTER SHARDS`
    /// is only in 7): each entry is a range, its master's address, then its replicas'.
    private func load(from node: RedisEndpoint, until deadline: ContinuousClock.Instant) throws {
        let reply = try pool.send([Array("CLUSTER".utf8), Array("SLOTS".utf8)], shape: .slotMap, to: node, until: deadline)
        guard case .array(let ranges) = reply else {
            if case .error(let message) = reply { throw RemoteStoreError.redis("\(node): CLUSTER SLOTS: \(message)") }
            throw RemoteStoreError.redis("\(node): CLUSTER SLOTS answered no array")
        }
        var map = [RedisEndpoint?](repeating: nil, count: HashSlot.count)
        var assigned = 0
        for range in ranges {
            guard case .array(let fields) = range, fields.count >= 3,
                  case .integer(let first) = fields[0], case .integer(let last) = fields[1],
                  0 <= first, first <= last, last < HashSlot.count,
                  case .array(let master) = fields[2], master.count >= 2,
                  let host = master[0].text, case .integer(let port) = master[1], (1...65535).contains(port) else {
                throw RemoteStoreError.redis("\(node): an unreadable CLUSTER SLOTS reply")
            }
            // An empty host is the node's way of saying "the address you reached me at";
            // "?" means it has none to give, and the one used to reach it is the best guess.
            let owner = RedisEndpoint(host: host.isEmpty || host == "?" ? node.host : host, port: Int(port))
            // Ranges never overlap in a real map, so no more than 16,384 slots are assigned
            // in all: checked before the loop, lest overlapping ranges make it ~10^9 steps.
            assigned += Int(last - first) + 1
            guard assigned <= HashSlot.count else {
                throw RemoteStoreError.redis("\(node): a CLUSTER SLOTS reply assigning more than \(HashSlot.count) slots")
            }
            for slot in Int(first)...Int(last) {
                guard map[slot] == nil else { throw RemoteStoreError.redis("\(node): a CLUSTER SLOTS reply assigning slot \(slot) twice") }
                map[slot] = owner
            }
        }
        slots.withLock { $0 = map }
        lastAnswered.withLock { $0 = node }
        // Idle connections to nodes the cluster no longer names are closed, so that nodes
        // named once (a stale MOVED, a removed node) do not hold sockets for good.
        pool.keepIdle(only: Set(map.compactMap { $0 }).union(seeds))
    }

    private static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var left = timespec()
        while nanosleep(&request, &left) != 0 && errno == EINTR { request = left }
    }
}
