import Foundation

/// A Redis Cluster of three masters on loopback, made with `redis-cli --cluster create`; ready
/// (every node says `cluster_state:ok`) when `init` returns; stopped when dropped. With `tls`,
/// every node speaks TLS only, with a certificate for 127.0.0.1 signed by `caFile`.
final class LoopbackCluster {
    let nodes: [LoopbackServer]
    /// The CA file of a TLS cluster's certificates (their folder is removed when dropped).
    let caFile: String?
    private let certificates: Scratch?
    /// What redis-cli needs to reach the nodes.
    private let cliOptions: [String]

    init(masters: Int = 3, tls: Bool = false) throws {
        certificates = tls ? Scratch() : nil
        if let certificates { LoopbackServer.makeCertificates(in: certificates.path, names: "IP:127.0.0.1,DNS:localhost") }
        caFile = certificates.map { $0.path + "/ca.pem" }
        cliOptions = caFile.map { ["--tls", "--cacert", $0] } ?? []
        let folder = certificates?.path
        nodes = try (0..<masters).map { _ in try LoopbackServer.redisClusterNode(tlsCertificates: folder) }
        let create = try runProgram(LoopbackServer.redisCLIPath!, cliOptions + ["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" }
                                    + ["--cluster-replicas", "0", "--cluster-yes"])
        guard create.status == 0 else { throw ClusterError.notCreated(create.output + create.error) }
        try waitUntilOK()
    }

    /// Polls `CLUSTER INFO` on every node until all say the cluster is ok (all slots served,
    /// the configuration agreed), for at most 30 seconds.
    func waitUntilOK() throws {
        let deadline = Date().addingTimeInterval(30)
        while try !nodes.allSatisfy({ try cli(["cluster", "info"], on: $0).contains("cluster_state:ok") }) {
            guard Date() < deadline else { throw ClusterError.notReady }
            usleep(20_000)  // polling a condition (the cluster's state), not standing in for one
        }
    }

    /// `redis-cli -p PORT ARGUMENTS…` on `node`, its output.
    func cli(_ arguments: [String], on node: LoopbackServer) throws -> String {
        try runProgram(LoopbackServer.redisCLIPath!, cliOptions + ["-p", "\(node.port)"] + arguments).output
    }

    /// The node's cluster id.
    func id(of node: LoopbackServer) throws -> String {
        try cli(["cluster", "myid"], on: node).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// How many keys the node holds.
    func keyCount(on node: LoopbackServer) throws -> Int {
        Int(try cli(["dbsize"], on: node).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// `host:port,host:port,…` of every node, for a `redis+cluster://` URL.
    var seeds: String { nodes.map { "127.0.0.1:\($0.port)" }.joined(separator: ",") }

    enum ClusterError: Error { case notCreated(String), notReady }
}
